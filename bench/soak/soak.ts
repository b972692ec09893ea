/**
 * A soak run against a running `prism serve`: `streams` concurrent clients, each sending one
 * request after another for `seconds`, mixing families (OpenAI chat and completions, TGI,
 * vLLM, KServe, native), streamed and unary, short and long prompts and prompts sharing a long
 * prefix; some clients disconnect at random points (before the headers, mid-stream, between
 * events) and some KServe streams are stopped with stopInfer. It reports what a team needs to
 * trust the server: requests done, errors by status, streams lost (started, never finished or
 * errored, not deliberately cut), TTFT and inter-token times, KV blocks in use once idle, and the
 * server's RSS and open file descriptors at start, middle and end.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { scenarios } from './scenarios.js';
import { sendOne, type Outcome, type Plan, type RequestRecord } from './send.js';

export { closeSoakClient } from './send.js';

export interface SoakTarget {
  /** Service listener, e.g. http://127.0.0.1:1025 */
  readonly url: string;
  /** Management listener (for /v1/status: block counts, running and waiting requests). */
  readonly managementUrl: string;
  /** The server's pid, for RSS and open fds from /proc (same machine); absent: not reported. */
  readonly pid?: number;
  readonly model: string;
}

export interface SoakOptions {
  readonly streams: number;
  readonly seconds: number;
  /** Chance that a request is cut by its client at a random point. */
  readonly disconnectRate: number;
  /** Chance that a KServe stream is stopped with stopInfer after its first token. */
  readonly stopRate: number;
  /** New tokens per request: uniform in [min, max]. */
  readonly maxTokens: readonly [number, number];
  readonly seed: number;
  /**
   * Wait before the end sample so idle keep-alive connections are closed by the server
   * (ServerConfig.limits.keepAliveTimeoutMs, 5 s): fds still open then are leaks.
   */
  readonly settleMs?: number;
  readonly log?: (line: string) => void;
  /** Told of every request once it ended, and of every piece of output as it reached its client. */
  readonly observer?: SoakObserver;
  /** Runs once the clients are done, before waiting for the server to go idle (faults settle). */
  readonly beforeIdle?: () => Promise<void>;
}

export interface SoakObserver {
  request?(r: RequestRecord): void;
  /** Epoch ms of a token event (streams) or a whole answer (unary). */
  output?(at: number): void;
}

export interface ProcessSample {
  readonly at: string;
  readonly rssMb?: number;
  readonly openFds?: number;
}

export interface SoakReport {
  readonly streams: number;
  readonly seconds: number;
  readonly requests: number;
  readonly completed: number;
  readonly deliberateDisconnects: number;
  readonly deliberateStops: number;
  /** Non-2xx replies and error events, by status (or `event` for an error inside a stream). */
  readonly errorsByStatus: Record<string, number>;
  /** Requests that failed without a reply (connection reset, timeout) and were not cut on purpose. */
  readonly transportErrors: number;
  readonly streamsLost: number;
  readonly byScenario: Record<string, number>;
  readonly ttftMs: { p50: number; p99: number; n: number };
  readonly interTokenMs: { p50: number; p99: number; n: number };
  readonly kvBlocksInUseAfter: number;
  readonly kvBlocksTotal: number;
  readonly process: readonly ProcessSample[];
  readonly examples: readonly string[];
}

/** A small seeded PRNG (mulberry32), so a run's mix is reproducible (the image fuzz test's too). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
}

export function processSample(pid: number | undefined, at: string): ProcessSample {
  if (pid === undefined) return { at };
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf-8');
    const rssKb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    const openFds = readdirSync(`/proc/${pid}/fd`).length;
    // A process on its way out has no VmRSS line: its RSS is not reported.
    return rssKb === undefined ? { at, openFds } : { at, rssMb: Math.round(Number(rssKb) / 1024), openFds };
  } catch {
    return { at };
  }
}

const SHARED_PREFIX =
  'You are a careful assistant for a library. The library opens at nine and closes at six on weekdays, ' +
  'at ten and four on Saturdays, and is closed on Sundays. Members may borrow up to eight books for three ' +
  'weeks and renew them twice unless someone else reserved them. Late returns cost ten cents a day. ' +
  'Rooms can be booked for two hours a day. Answer the member in one short sentence. ';
const QUESTIONS = [
  'When do you open on Saturday?',
  'How many books can I borrow?',
  'Can I renew twice?',
  'Is Sunday open?',
];
const LONG =
  'The river runs past the old mill and under the stone bridge, where children fish in summer. '.repeat(14);

type Kind = 'short' | 'long' | 'shared';

export async function runSoak(target: SoakTarget, o: SoakOptions): Promise<SoakReport> {
  const random = rng(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const log = o.log ?? (() => {});
  const ttft: number[] = [];
  const itl: number[] = [];
  const outcomes: Record<string, number> = {};
  const byScenario: Record<string, number> = {};
  const examples: string[] = [];
  const samples: ProcessSample[] = [processSample(target.pid, 'start')];
  let requests = 0;
  let serial = 0;
  const deadline = Date.now() + o.seconds * 1000;
  const note = (outcome: Outcome, detail?: string): void => {
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (detail && examples.length < 10 && outcome !== 'completed') examples.push(`${outcome}: ${detail}`);
  };

  const plan = (): Plan => {
    const scenario = pick(scenarios);
    const kind: Kind = pick(['short', 'short', 'long', 'shared', 'shared']);
    const prompt =
      kind === 'short'
        ? pick(QUESTIONS)
        : kind === 'long'
          ? LONG + pick(QUESTIONS)
          : SHARED_PREFIX + pick(QUESTIONS);
    const [lo, hi] = o.maxTokens;
    const p = {
      scenario,
      prompt,
      maxTokens: lo + Math.floor(random() * (hi - lo + 1)),
      id: `soak-${o.seed}-${serial++}`,
      seed: Math.floor(random() * 2 ** 31),
      stopAfterFirstToken: scenario.name.startsWith('kserve') && random() < o.stopRate,
    };
    if (random() < o.disconnectRate) {
      if (!scenario.stream || random() < 0.3) return { ...p, cutBeforeHeadersMs: Math.floor(random() * 200) };
      return { ...p, cutAfterEvents: 1 + Math.floor(random() * 4) };
    }
    return p;
  };

  const lastToken = new Map<string, number>();
  const one = async (p: Plan): Promise<void> => {
    const t0 = performance.now();
    const r = await sendOne(target, p, (now) => {
      const last = lastToken.get(p.id);
      if (p.scenario.stream) {
        if (last === undefined) ttft.push(now - t0);
        else itl.push(now - last);
      }
      lastToken.set(p.id, now);
      o.observer?.output?.(Date.now());
    });
    lastToken.delete(p.id);
    o.observer?.request?.(r);
    if (r.outcome === 'status:event' && examples.length < 10) examples.push(`event error: ${r.detail}`);
    note(r.outcome, r.outcome === 'status:event' ? undefined : r.detail);
  };

  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const p = plan();
      requests++;
      byScenario[p.scenario.name] = (byScenario[p.scenario.name] ?? 0) + 1;
      await one(p);
    }
  };
  let middleTaken = false;
  const middle = setTimeout(
    () => {
      middleTaken = true;
      samples.push(processSample(target.pid, 'middle'));
      log(`soak: half-way, ${requests} requests sent`);
    },
    (o.seconds * 1000) / 2,
  );
  await Promise.all(Array.from({ length: o.streams }, worker));
  clearTimeout(middle);
  if (!middleTaken) samples.push(processSample(target.pid, 'middle'));

  await o.beforeIdle?.();
  // Once every client is gone the engine must go idle and give every block back.
  const status = await waitIdle(target.managementUrl, 30000);
  await new Promise((r) => setTimeout(r, o.settleMs ?? 6000));
  samples.push(processSample(target.pid, 'end'));
  const errorsByStatus: Record<string, number> = {};
  for (const [k, v] of Object.entries(outcomes)) if (k.startsWith('status:')) errorsByStatus[k.slice(7)] = v;
  return {
    streams: o.streams,
    seconds: o.seconds,
    requests,
    completed: outcomes.completed ?? 0,
    deliberateDisconnects: outcomes.disconnect ?? 0,
    deliberateStops: outcomes.stopped ?? 0,
    errorsByStatus,
    transportErrors: outcomes.transport ?? 0,
    streamsLost: outcomes.lost ?? 0,
    byScenario,
    ttftMs: { p50: percentile(ttft, 50), p99: percentile(ttft, 99), n: ttft.length },
    interTokenMs: { p50: percentile(itl, 50), p99: percentile(itl, 99), n: itl.length },
    kvBlocksInUseAfter: status.total - status.free,
    kvBlocksTotal: status.total,
    process: samples,
    examples,
  };
}

/** Polls the management listener's /v1/status until nothing runs or waits; returns the block counts. */
export async function waitIdle(managementUrl: string, ms: number): Promise<{ free: number; total: number }> {
  const until = Date.now() + ms;
  for (;;) {
    const s = (await (await fetch(`${managementUrl}/v1/status`)).json()) as {
      resource: {
        runningRequestNum: number;
        waitingRequestNum: number;
        freeNpuBlockNums: number;
        totalNpuBlockNums: number;
      };
    };
    const r = s.resource;
    if ((r.runningRequestNum === 0 && r.waitingRequestNum === 0) || Date.now() > until)
      return { free: r.freeNpuBlockNums, total: r.totalNpuBlockNums };
    await new Promise((res) => setTimeout(res, 100));
  }
}
