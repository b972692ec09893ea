/**
 * The streaming path of every family's generation routes (MindIE's `/dresult`, a stream of
 * other requests' results, has its own loop: gateways/pd/dresult.ts): wait for the engine's first
 * event before answering (so that failures found up front — engine validation, overload, an
 * unknown adapter — keep their HTTP status), then open the 200 stream, hand each event to the
 * family's mapping, and report a failure that comes after the 200 inside the stream, in the
 * family's error body. Families differ only in their mapping, their framing (SSE or the old
 * vLLM server's NUL-separated JSON) and their error body.
 */
import type { Context } from 'koa';
import { toHttpError, type HttpError } from './http-error.js';
import { RawStreamWriter, SseWriter } from './sse.js';

/** Where a stream's frames go. */
interface StreamSink {
  end(): void;
}

interface StreamPlan<E, W extends StreamSink> {
  /** The answer's events: the engine's, or a family's view of them. */
  readonly events: AsyncIterable<E>;
  /**
   * The request's abort signal: once it has fired the stream just ends, without an error
   * frame (the client has gone, or the family's own timeout cancelled the request).
   */
  readonly signal: AbortSignal;
  /** Opens the 200 response. Called once, after the first event has arrived. */
  readonly open: () => W;
  /** Frames written as soon as the stream is open, before the first event's (chat's role deltas). */
  readonly onOpen?: (out: W) => void;
  /** One event → zero or more frames. */
  readonly onEvent: (ev: E, out: W) => void | Promise<void>;
  /** After the last event: usage frames, `[DONE]`. */
  readonly onEnd?: (out: W) => void | Promise<void>;
  /** A failure after the 200, written into the stream in the family's shape. */
  readonly onError: (err: HttpError, out: W) => void;
}

async function streamAnswer<E, W extends StreamSink>(plan: StreamPlan<E, W>): Promise<void> {
  const it = plan.events[Symbol.asyncIterator]();
  // A failure here is thrown before any byte is sent: the family's error boundary answers it.
  const first = await it.next();
  const out = plan.open();
  try {
    plan.onOpen?.(out);
    for (let r = first; !r.done; r = await it.next()) {
      const pending = plan.onEvent(r.value, out);
      if (pending) await pending;
    }
    await plan.onEnd?.(out);
  } catch (err) {
    if (!plan.signal.aborted) plan.onError(toHttpError(err), out);
  } finally {
    out.end();
  }
}

/** The SSE form of `streamAnswer`: each family gives its mapping and its error body. */
export interface SsePlan<E> extends Omit<StreamPlan<E, SseWriter>, 'open' | 'onError'> {
  readonly errorBody: (err: HttpError) => unknown;
  /** The SSE event name of the error frame (Anthropic's `error`); none by default. */
  readonly errorEvent?: string;
}

export function streamSse<E>(ctx: Context, plan: SsePlan<E>): Promise<void> {
  return streamAnswer<E, SseWriter>({
    ...plan,
    open: () => new SseWriter(ctx),
    onError: (err, sse) => sse.data(plan.errorBody(err), plan.errorEvent),
  });
}

/** A framing of JSON objects on a raw stream: each object followed by `separator`. */
export interface JsonFramesPlan<E> extends Omit<StreamPlan<E, RawStreamWriter>, 'open' | 'onError'> {
  readonly errorBody: (err: HttpError) => unknown;
}

function streamJsonFrames<E>(
  ctx: Context,
  plan: JsonFramesPlan<E>,
  contentType: string,
  separator: string,
): Promise<void> {
  return streamAnswer<E, RawStreamWriter>({
    ...plan,
    open: () => new RawStreamWriter(ctx, contentType),
    onError: (err, out) => out.write(JSON.stringify(plan.errorBody(err)) + separator),
  });
}

/** The old vLLM api_server's framing: JSON objects, each followed by a NUL byte. */
export function streamNulJson<E>(ctx: Context, plan: JsonFramesPlan<E>): Promise<void> {
  return streamJsonFrames(ctx, plan, 'application/json', '\0');
}

/** Ollama's framing: NDJSON, one JSON object a line. */
export function streamNdjson<E>(ctx: Context, plan: JsonFramesPlan<E>): Promise<void> {
  return streamJsonFrames(ctx, plan, 'application/x-ndjson', '\n');
}

/** An event of one of several merged answers, tagged with the answer it belongs to. */
export interface Tagged<E> {
  readonly source: number;
  readonly event: E;
}

/**
 * Several answers streamed as one (a completions request with a list of prompts): the first
 * pull waits for every answer's first event, so a failure found up front in any of them still
 * gets its HTTP status; after that, events come in the order they arrive. `onFailure` runs
 * when any answer fails (the caller cancels the others).
 */
export async function* mergeAnswers<E>(
  sources: readonly AsyncIterable<E>[],
  onFailure: () => void,
): AsyncGenerator<Tagged<E>> {
  const its = sources.map((s) => s[Symbol.asyncIterator]());
  try {
    const firsts = await Promise.all(its.map((it) => it.next()));
    const pending = new Map<number, Promise<{ source: number; r: IteratorResult<E> }>>();
    const arm = (source: number): void => {
      const p = its[source].next().then((r) => ({ source, r }));
      // Answers still running when another fails are cancelled; their rejections are expected.
      p.catch(() => undefined);
      pending.set(source, p);
    };
    for (const [source, r] of firsts.entries()) {
      if (r.done) continue;
      yield { source, event: r.value };
      arm(source);
    }
    while (pending.size > 0) {
      const { source, r } = await Promise.race(pending.values());
      pending.delete(source);
      if (r.done) continue;
      yield { source, event: r.value };
      arm(source);
    }
  } catch (err) {
    onFailure();
    throw err;
  }
}
