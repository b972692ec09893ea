/**
 * One soak request over HTTP, read the way its client would read it, and what happened to it
 * (a `RequestRecord`): its outcome — completed, cut or stopped on purpose, an error with its
 * status (and whether the error was a clear one: a JSON body or event in the family's error
 * shape), a stream that ended without its final event (lost), or no reply at all — when its
 * headers and its end came, the text of its answer, how many times the gateway sent it to
 * another engine (`x-prism-retries`), and whether any of it reached the client twice.
 */
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { createParser } from 'eventsource-parser';
import { parseJson, type Scenario } from './scenarios.js';

export type Outcome = 'completed' | 'disconnect' | 'stopped' | 'lost' | 'transport' | `status:${string}`;

export interface Plan {
  readonly scenario: Scenario;
  readonly prompt: string;
  readonly maxTokens: number;
  readonly id: string;
  readonly seed: number;
  /** Cut after this many events, or never. */
  readonly cutAfterEvents?: number;
  /** Cut this long after sending (before the headers, unless they came sooner). */
  readonly cutBeforeHeadersMs?: number;
  readonly stopAfterFirstToken: boolean;
}

export interface RequestRecord {
  readonly plan: Plan;
  readonly path: string;
  readonly body: unknown;
  /** Epoch ms. */
  readonly startedAt: number;
  readonly headersAt?: number;
  readonly endedAt: number;
  readonly outcome: Outcome;
  /** For errors: the first 160 characters of the body or event. */
  readonly detail?: string;
  /** For errors: a JSON body or event with an `error` member (the families' error shapes). */
  readonly clearError?: boolean;
  /** `x-prism-retries`: the times the gateway sent the request to another engine. */
  readonly retries: number;
  /** The answer's text (completed requests). */
  readonly text?: string;
  /** Why the client got part of the answer twice (a second final event, events after it, deltas ≠ the whole). */
  readonly duplicated?: string;
  /** performance.now() of the first token (streams). */
  readonly firstTokenAt?: number;
}

export interface SendTarget {
  readonly url: string;
  readonly model: string;
}

/**
 * The soak's HTTP client: node:http with keep-alive and no client-side timeouts (fetch gives up
 * on a reply whose headers take over 300 s, which an overloaded server's queue can exceed; the
 * soak measures the server, so the client waits as long as the server takes).
 */
const agent = new Agent({ keepAlive: true });

/** Closes the soak client's idle keep-alive connections. */
export function closeSoakClient(): void {
  agent.destroy();
}

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

const hasError = (j: Record<string, unknown> | undefined): boolean =>
  j !== undefined && (typeof j.error === 'string' || (typeof j.error === 'object' && j.error !== null));

/** Sends `p` and reads its answer; `onToken(now)` is told of each token event as it arrives. */
export async function sendOne(
  target: SendTarget,
  p: Plan,
  onToken: (now: number) => void = () => {},
): Promise<RequestRecord> {
  const { path, body } = p.scenario.request(target, p.prompt, p.maxTokens, p.id, p.seed);
  const startedAt = Date.now();
  const base = { plan: p, path, body, startedAt };
  const abort = new AbortController();
  let cut = false;
  let headersAt: number | undefined;
  let retries = 0;
  const timer =
    p.cutBeforeHeadersMs !== undefined
      ? setTimeout(() => {
          cut = true;
          abort.abort();
        }, p.cutBeforeHeadersMs)
      : undefined;
  const done = (
    r: Omit<RequestRecord, keyof typeof base | 'endedAt' | 'retries' | 'headersAt'>,
  ): RequestRecord => {
    clearTimeout(timer);
    return { ...base, ...r, retries, ...(headersAt !== undefined ? { headersAt } : {}), endedAt: Date.now() };
  };
  try {
    const res = await post(target.url + path, body, abort.signal);
    headersAt = Date.now();
    retries = Number(res.headers['x-prism-retries'] ?? 0);
    // A deliberate cut may destroy the response after the reading loop has let go of it;
    // errors while reading still surface through the loop below.
    res.on('error', () => {});
    if (res.statusCode !== 200) {
      const text = await readText(res);
      return done({
        outcome: `status:${res.statusCode}`,
        detail: `${p.scenario.name} ${text.slice(0, 160)}`,
        clearError: hasError(parseJson(text)),
      });
    }
    if (!p.scenario.stream) {
      const json = JSON.parse(await readText(res)) as Record<string, unknown>;
      onToken(performance.now());
      return done(cut ? { outcome: 'disconnect' } : { outcome: 'completed', text: p.scenario.text!(json) });
    }
    let events = 0;
    let ended: 'end' | 'error' | undefined;
    let errorEvent: string | undefined;
    let firstTokenAt: number | undefined;
    let stopped = false;
    let text = '';
    let whole: string | undefined;
    let duplicated: string | undefined;
    const parser = createParser({
      onEvent: (e) => {
        events++;
        const kind = p.scenario.event!(e.data);
        if (ended !== undefined && !duplicated)
          duplicated = `an event after the stream's last: ${e.data.slice(0, 80)}`;
        if (kind === 'token') {
          const now = performance.now();
          onToken(now);
          if (firstTokenAt === undefined) {
            firstTokenAt = now;
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
          }
        }
        if (kind !== 'error') {
          text += p.scenario.delta!(e.data);
          whole = p.scenario.whole?.(e.data) ?? whole;
        }
        if (kind === 'end' || kind === 'error') {
          ended ??= kind;
          if (kind === 'error') errorEvent ??= e.data;
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
    const at = firstTokenAt !== undefined ? { firstTokenAt } : {};
    if (whole !== undefined && whole !== text && !duplicated)
      duplicated = `the deltas (${JSON.stringify(text.slice(0, 60))}) are not the whole answer (${JSON.stringify(whole.slice(0, 60))})`;
    const dup = duplicated ? { duplicated } : {};
    if (cut) return done({ outcome: 'disconnect', ...at, ...dup });
    if (stopped) return done({ outcome: 'stopped', ...at, ...dup });
    if (ended === 'end') return done({ outcome: 'completed', text: whole ?? text, ...at, ...dup });
    if (ended === 'error')
      return done({
        outcome: 'status:event',
        detail: `${p.scenario.name} ${errorEvent!.slice(0, 160)}`,
        clearError: hasError(parseJson(errorEvent!)),
        ...at,
        ...dup,
      });
    return done({
      outcome: 'lost',
      detail: `${p.scenario.name} ended after ${events} events without a final one`,
      ...at,
    });
  } catch (err) {
    if (cut) return done({ outcome: 'disconnect' });
    const e = err as Error & { code?: string; cause?: { code?: string } };
    return done({
      outcome: 'transport',
      detail: `${p.scenario.name} ${e.code ?? e.cause?.code ?? ''} ${e.message}`,
    });
  }
}
