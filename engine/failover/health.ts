/**
 * Watching engines that may stop answering without going away: a process stopped (SIGSTOP)
 * keeps its connections open and answers nothing, and an engine whose step never returns
 * still answers over gRPC but generates nothing. A stream to either would wait forever, so
 * the fronts that hold several engines (the pool of replicas, the prefill/decode
 * coordinator) ask each engine for its status every `intervalMs`:
 *
 * - no answer within `timeoutMs`, `misses` times in a row, or a refused connection: the engine
 *   is down (`down(i, why)`; the front takes it out of rotation and abandons its requests,
 *   which are retried where nothing reached the client);
 * - requests running and no token generated for `stallMs`: a stuck step, down as well;
 * - an answer again, with progress: up (`up(i)`), back in rotation — a restarted engine on the
 *   same address rejoins this way.
 *
 * One check per engine is in flight at a time, so a stopped engine costs one pending call, not
 * one per interval: the front's memory stays bounded however long an engine hangs.
 */
import type { Engine, EngineStatus } from '../types.js';

export interface HealthOptions {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Consecutive unanswered checks before the engine counts as stopped. */
  readonly misses: number;
  /** Requests running without a token generated for this long: a stuck step. */
  readonly stallMs: number;
}

/**
 * A stuck step is told from a slow one only by time: an overloaded engine's first steps can
 * take over a minute on a shared 2-core host (a soak of 256 streams there saw 61 s without a
 * token on both engines), so the default waits five minutes; a stopped process is caught by
 * the timeouts, within seconds.
 */
export const DEFAULT_HEALTH: HealthOptions = {
  intervalMs: 1000,
  timeoutMs: 5000,
  misses: 2,
  stallMs: 300_000,
};

export interface HealthEvents {
  /** Each answered status (the fronts' load figures come from these). */
  status?(i: number, s: EngineStatus): void;
  /**
   * `stopped`: it holds requests it will not finish (no answer, or a stuck step), so the front
   * abandons them; false: it is unreachable (its streams broke by themselves).
   */
  down(i: number, why: string, stopped: boolean): void;
  up(i: number): void;
}

interface Watch {
  readonly engine: Engine;
  readonly name: string;
  pending: boolean;
  misses: number;
  /** Down as far as this monitor knows (starts up: a front tries an engine until told otherwise). */
  down: boolean;
  /** The front was told of this outage (a failure the front saw itself is not told back). */
  told: boolean;
  /** Generated tokens at the last change, and when it changed. */
  progress: number;
  progressAt: number;
}

/** Races `p` with a timer; the timer never keeps the process alive. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export class HealthMonitor {
  private readonly watches: Watch[];
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    engines: readonly { engine: Engine; name: string }[],
    private readonly o: HealthOptions,
    private readonly events: HealthEvents,
  ) {
    this.watches = engines.map(({ engine, name }) => ({
      engine,
      name,
      pending: false,
      misses: 0,
      down: false,
      told: false,
      progress: -1,
      progressAt: Date.now(),
    }));
    this.timer = setInterval(() => this.checkAll(), o.intervalMs);
    this.timer.unref();
    this.checkAll();
  }

  get timeoutMs(): number {
    return this.o.timeoutMs;
  }

  isDown(i: number): boolean {
    return this.watches[i].down;
  }

  /** The front saw engine `i` fail (a broken stream): it is down until a check is answered again. */
  sawFailure(i: number): void {
    this.watches[i].down = true;
  }

  /** Checks every engine now (those whose previous check is still pending are skipped). */
  checkAll(): void {
    this.watches.forEach((w, i) => {
      if (!w.pending) void this.check(w, i);
    });
  }

  private async check(w: Watch, i: number): Promise<void> {
    w.pending = true;
    let s: EngineStatus;
    try {
      s = await withTimeout(w.engine.status(), this.o.timeoutMs, `status of ${w.name}`);
    } catch (e) {
      w.pending = false;
      const timedOut = e instanceof Error && / no answer within /.test(e.message);
      if (timedOut && ++w.misses < this.o.misses) return;
      this.setDown(
        w,
        i,
        timedOut
          ? `the engine at ${w.name} stopped answering (no status within ${this.o.timeoutMs} ms, ${w.misses} times in a row)`
          : `the engine at ${w.name} is unreachable: ${(e as Error).message}`,
        timedOut,
      );
      return;
    }
    w.pending = false;
    w.misses = 0;
    this.events.status?.(i, s);
    if (s.stopping) {
      // Draining (SIGTERM): it finishes what it holds and refuses the rest.
      this.setDown(w, i, `the engine at ${w.name} is stopping`, false);
      return;
    }
    const now = Date.now();
    // Tokens only: a cancelled or failed request is not a step that returned.
    const progress = s.generationTokens;
    if (progress !== w.progress || s.running === 0) {
      w.progress = progress;
      w.progressAt = now;
    }
    if (now - w.progressAt >= this.o.stallMs) {
      this.setDown(
        w,
        i,
        `the engine at ${w.name} has ${s.running} request(s) running and generated nothing for ` +
          `${Math.round((now - w.progressAt) / 1000)} s (a step that does not return)`,
        true,
      );
      return;
    }
    if (w.down) {
      w.down = false;
      w.told = false;
      this.events.up(i);
    }
  }

  private setDown(w: Watch, i: number, why: string, stopped: boolean): void {
    // Told once per outage; the front keeps its requests away until the engine is up again.
    if (w.down && w.told) return;
    w.down = true;
    w.told = true;
    this.events.down(i, why, stopped);
  }

  close(): void {
    clearInterval(this.timer);
  }
}
