/**
 * The faults of a fault soak, on a schedule: SIGKILL an engine (then start it again on the
 * same socket, as a supervisor would) every `killEveryMs`, SIGSTOP one for `hangForMs` (then
 * SIGCONT) every `hangEveryMs`. Faults take the engines in turn — kills from the first
 * engine, hangs from the second — so over a run every engine (both halves of a split pair)
 * is killed and hung. A hang due within a minute of a kill (half the kill interval, if that
 * is shorter) is moved that much later, and a fault due while an engine is still coming back
 * waits for it, so each fault's effects can be told apart.
 */
import type { EngineProcess } from './topology.js';

export type FaultKind = 'kill' | 'hang';

export interface ScheduledFault {
  readonly kind: FaultKind;
  /** Milliseconds after the soak's start. */
  readonly atMs: number;
}

export interface FaultEvent {
  readonly kind: FaultKind;
  readonly engine: string;
  /** Epoch ms of the signal. */
  readonly at: number;
  /** Kill: when the restarted engine answered; hang: when it was continued. */
  recoveredAt?: number;
  /** The restart failed (kill). */
  error?: string;
}

export function faultSchedule(o: {
  seconds: number;
  killEveryMs?: number;
  hangEveryMs?: number;
}): ScheduledFault[] {
  const end = o.seconds * 1000;
  const apart = Math.min(60_000, (o.killEveryMs ?? Infinity) / 2);
  const kills: ScheduledFault[] = [];
  for (let t = o.killEveryMs ?? Infinity; t < end; t += o.killEveryMs!) kills.push({ kind: 'kill', atMs: t });
  const hangs: ScheduledFault[] = [];
  for (let t = o.hangEveryMs ?? Infinity; t < end; t += o.hangEveryMs!) {
    let at = t;
    while (kills.some((k) => Math.abs(k.atMs - at) < apart)) at += apart;
    if (at < end) hangs.push({ kind: 'hang', atMs: at });
  }
  return [...kills, ...hangs].sort((a, b) => a.atMs - b.atMs);
}

/** Parses `10m`, `90s`, `1500ms` or a bare number of seconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`${flag}: must be a duration such as 10m, 90s or 1500ms, got '${text}'`);
  const scale = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * scale);
}

export interface FaultRun {
  readonly events: FaultEvent[];
  /** Resolves once every fault that started has recovered (restart done, process continued). */
  settled(): Promise<void>;
  /** No further faults start. */
  cancel(): void;
}

export function runFaults(
  engines: readonly EngineProcess[],
  schedule: readonly ScheduledFault[],
  hangForMs: number,
  log: (line: string) => void,
): FaultRun {
  const events: FaultEvent[] = [];
  const pending: Promise<void>[] = [];
  const turn = { kill: 0, hang: 1 };
  // A fault due while an engine is still coming back from the last one waits for it: faults
  // never overlap, so each one's effects are its own.
  let last: Promise<void> = Promise.resolve();
  const timers = schedule.map((f) =>
    setTimeout(() => {
      last = last.then(() => {
        const engine = engines[turn[f.kind]++ % engines.length];
        const ev: FaultEvent = { kind: f.kind, engine: engine.name, at: Date.now() };
        events.push(ev);
        return inject(engine, ev);
      });
      pending.push(last);
    }, f.atMs),
  );
  const inject = async (engine: EngineProcess, ev: FaultEvent): Promise<void> => {
    if (ev.kind === 'kill') {
      log(`soak: fault ${events.length}: SIGKILL ${engine.name} (pid ${engine.pid()})`);
      engine.kill();
      try {
        await engine.start();
        ev.recoveredAt = Date.now();
        log(
          `soak: ${engine.name} restarted (pid ${engine.pid()}) ${ev.recoveredAt - ev.at} ms after the kill`,
        );
      } catch (e) {
        ev.error = (e as Error).message;
        log(`soak: ${engine.name} did not restart: ${ev.error}`);
      }
      return;
    }
    log(`soak: fault ${events.length}: SIGSTOP ${engine.name} (pid ${engine.pid()}) for ${hangForMs} ms`);
    engine.pause();
    await new Promise((r) => setTimeout(r, hangForMs));
    engine.resume();
    ev.recoveredAt = Date.now();
    log(`soak: ${engine.name} continued (SIGCONT)`);
  };
  return {
    events,
    settled: async () => {
      await Promise.all(pending);
    },
    cancel: () => timers.forEach(clearTimeout),
  };
}
