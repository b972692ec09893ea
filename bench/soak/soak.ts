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
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { createParser } from 'eventsource-parser';

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
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    return { at, rssMb: Math.round(rssKb / 1024), openFds: readdirSync(`/proc/${pid}/fd`).length };
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

/**
 * The soak's HTTP client: node:http with keep-alive and no client-side timeouts (fetch gives up
 * on a reply whose headers take over 300 s, which an overloaded server's queue can exceed; the
 * soak measures the server, so the client waits as long as the server takes).
 */
const agent = new Agent({ keepAlive: true });

/**
 * POSTs a JSON body. Aborting `signal` cuts the client off the way a browser tab closing does:
 * before the response it destroys the request (its 'error' reaches the promise); after, it
 * destroys the response without an error. Node's own `signal` option is not used: it destroys
 * the request with an AbortError even after the response, and when that lands between the
 * response's end and the keep-alive socket going back to the pool, the socket's 'error' has no
 * listener and becomes an uncaught exception.
 */
function post(url: string, body: unknown, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    let response: IncomingMessage | undefined;
    const req = httpRequest(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        response = res;
        resolve(res);
      },
    );
    req.on('error', reject);
    signal.addEventListener('abort', () => (response ? response.destroy() : req.destroy()), { once: true });
    req.end(JSON.stringify(body));
  });
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks).toString('utf-8');
}

/** Closes the soak client's idle keep-alive connections. */
export function closeSoakClient(): void {
  agent.destroy();
}

interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  readonly request: (
    t: SoakTarget,
    prompt: string,
    maxTokens: number,
    id: string,
  ) => { path: string; body: unknown };
  /** For streams: does this event carry a token, end the stream, or report an error? */
  readonly event?: (data: string) => 'token' | 'end' | 'error' | 'other';
}

const json = (d: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(d) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

const scenarios: readonly Scenario[] = [
  {
    name: 'openai-chat-stream',
    stream: true,
    request: (t, p, n) => ({
      path: '/v1/chat/completions',
      body: { model: t.model, messages: [{ role: 'user', content: p }], max_tokens: n, stream: true },
    }),
    event: (d) => {
      if (d === '[DONE]') return 'end';
      const j = json(d);
      if (!j || j.error) return 'error';
      const c = (j.choices as { delta?: { content?: string } }[] | undefined)?.[0];
      return c?.delta?.content ? 'token' : 'other';
    },
  },
  {
    name: 'openai-chat',
    stream: false,
    request: (t, p, n) => ({
      path: '/v1/chat/completions',
      body: { model: t.model, messages: [{ role: 'user', content: p }], max_tokens: n },
    }),
  },
  {
    name: 'openai-completions-stream',
    stream: true,
    request: (t, p, n) => ({
      path: '/v1/completions',
      body: { model: t.model, prompt: p, max_tokens: n, stream: true },
    }),
    event: (d) => {
      if (d === '[DONE]') return 'end';
      const j = json(d);
      if (!j || j.error) return 'error';
      return (j.choices as { text?: string }[] | undefined)?.[0]?.text ? 'token' : 'other';
    },
  },
  {
    name: 'tgi-generate-stream',
    stream: true,
    request: (_t, p, n) => ({
      path: '/generate_stream',
      body: { inputs: p, parameters: { max_new_tokens: n } },
    }),
    event: (d) => {
      const j = json(d);
      if (!j || j.error) return 'error';
      if (typeof j.generated_text === 'string') return 'end';
      return 'token';
    },
  },
  {
    name: 'tgi-generate',
    stream: false,
    request: (_t, p, n) => ({ path: '/generate', body: { inputs: p, parameters: { max_new_tokens: n } } }),
  },
  {
    name: 'vllm-generate',
    stream: false,
    request: (_t, p, n) => ({ path: '/generate', body: { prompt: p, max_tokens: n } }),
  },
  {
    name: 'kserve-generate-stream',
    stream: true,
    request: (t, p, n, id) => ({
      path: `/v2/models/${t.model}/generate_stream`,
      body: { id, text_input: p, parameters: { max_new_tokens: n } },
    }),
    event: (d) => {
      const j = json(d);
      if (!j || j.error) return 'error';
      if ((j.details as { finish_reason?: string } | undefined)?.finish_reason) return 'end';
      return 'token';
    },
  },
  {
    name: 'native-infer-stream',
    stream: true,
    request: (_t, p, n) => ({ path: '/infer', body: { inputs: p, stream: true, max_tokens: n } }),
    event: (d) => {
      const j = json(d);
      if (!j || j.error) return 'error';
      if (typeof j.generated_text === 'string') return 'end';
      return 'token';
    },
  },
];

type Outcome = 'completed' | 'disconnect' | 'stopped' | 'lost' | 'transport' | `status:${string}`;

interface Plan {
  scenario: Scenario;
  prompt: string;
  maxTokens: number;
  id: string;
  /** Cut after this many events (0 = before the headers arrive), or never. */
  cutAfterEvents?: number;
  cutBeforeHeadersMs?: number;
  stopAfterFirstToken: boolean;
}

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
    const p: Plan = {
      scenario,
      prompt,
      maxTokens: lo + Math.floor(random() * (hi - lo + 1)),
      id: `soak-${o.seed}-${serial++}`,
      stopAfterFirstToken: scenario.name.startsWith('kserve') && random() < o.stopRate,
    };
    if (random() < o.disconnectRate) {
      if (!scenario.stream || random() < 0.3) p.cutBeforeHeadersMs = Math.floor(random() * 200);
      else p.cutAfterEvents = 1 + Math.floor(random() * 4);
    }
    return p;
  };

  const one = async (p: Plan): Promise<void> => {
    const { path, body } = p.scenario.request(target, p.prompt, p.maxTokens, p.id);
    const abort = new AbortController();
    let cut = false;
    const timer =
      p.cutBeforeHeadersMs !== undefined
        ? setTimeout(() => {
            cut = true;
            abort.abort();
          }, p.cutBeforeHeadersMs)
        : undefined;
    const t0 = performance.now();
    try {
      const res = await post(target.url + path, body, abort.signal);
      // A deliberate cut may destroy the response after the reading loop has let go of it;
      // errors while reading still surface through the loop below.
      res.on('error', () => {});
      if (res.statusCode !== 200) {
        const text = await readText(res);
        note(`status:${res.statusCode}`, `${p.scenario.name} ${text.slice(0, 160)}`);
        return;
      }
      if (!p.scenario.stream) {
        JSON.parse(await readText(res));
        clearTimeout(timer);
        note(cut ? 'disconnect' : 'completed');
        return;
      }
      let events = 0;
      let last = 0;
      let ended: 'end' | 'error' | undefined;
      let firstToken = true;
      let stopped = false;
      const parser = createParser({
        onEvent: (e) => {
          events++;
          const kind = p.scenario.event!(e.data);
          const now = performance.now();
          if (kind === 'token') {
            if (firstToken) {
              ttft.push(now - t0);
              firstToken = false;
              if (p.stopAfterFirstToken) {
                stopped = true;
                void fetch(`${target.url}/v2/models/${target.model}/stopInfer`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: JSON.stringify({ id: p.id }),
                }).then(
                  (r) => r.text(),
                  () => {},
                );
              }
            } else itl.push(now - last);
            last = now;
          } else if (kind === 'end' || kind === 'error') {
            ended ??= kind;
            if (kind === 'error' && examples.length < 10)
              examples.push(`event error: ${p.scenario.name} ${e.data.slice(0, 160)}`);
          }
          if (p.cutAfterEvents !== undefined && events >= p.cutAfterEvents && ended === undefined) {
            cut = true;
            abort.abort();
          }
        },
      });
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res as AsyncIterable<Buffer>)
          parser.feed(decoder.decode(chunk, { stream: true }));
      } catch (err) {
        if (!cut) throw err;
      }
      clearTimeout(timer);
      if (cut) note('disconnect');
      else if (stopped) note('stopped');
      else if (ended === 'end') note('completed');
      else if (ended === 'error') note('status:event', p.scenario.name);
      else note('lost', `${p.scenario.name} ended after ${events} events without a final one`);
    } catch (err) {
      clearTimeout(timer);
      if (cut) note('disconnect');
      else {
        const e = err as Error & { code?: string; cause?: { code?: string } };
        note('transport', `${p.scenario.name} ${e.code ?? e.cause?.code ?? ''} ${e.message}`);
      }
    }
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
