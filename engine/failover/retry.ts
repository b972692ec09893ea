/**
 * Sending a request again when its engine fails before the client saw any of the answer
 * (vLLM's and llm-d's routers retry only what has not started streaming; MindIE's coordinator
 * recomputes a request whose prefill instance failed). One driver for every front that holds
 * several engines — the pool of replicas (gateways/engine-pool.ts) and the split
 * prefill/decode coordinator (engine/kv-transfer/coordinator.ts) — which differ only in where
 * the next attempt goes:
 *
 * - the seed is fixed before the first try (a request without one gets one here), so a retry
 *   samples the same tokens and a client that never saw the first try cannot tell;
 * - a retry is made only for an engine failure (UNAVAILABLE: it died, its stream broke, it
 *   refused as stopping, or the health monitor gave up on it) and only while nothing has
 *   reached the client (delivery.ts); each engine is tried at most once (the front's `next`
 *   never returns one it was given before);
 * - events the caller already holds are not handed over twice (replay.ts);
 * - a failure after the client saw output is thrown as it is: the gateway ends the stream
 *   with its family's error event.
 */
import { randomInt } from 'node:crypto';
import { EngineError } from '../errors.js';
import type { GenerateEvent, GenerateRequest } from '../types.js';
import { deliveryCheck, noteRetry } from './delivery.js';
import { ReplayGuard } from './replay.js';

/** Seeds a request without one picks are drawn as the engine draws its own (sampling-params.ts). */
const SEED_LIMIT = 2 ** 47;

/** The request with its seed fixed: its own, or one drawn now for every attempt to share. */
export function withFixedSeed(request: GenerateRequest): GenerateRequest {
  if (request.params.seed !== undefined) return request;
  return { ...request, params: { ...request.params, seed: randomInt(0, SEED_LIMIT) } };
}

/** An engine failure, as opposed to a failure of the request itself (bad input, a failed step). */
const isEngineFailure = (err: unknown): boolean => err instanceof EngineError && err.code === 'UNAVAILABLE';

/**
 * One try of a request on one engine (or one prefill/decode pair). Its signal is the client's
 * joined with the attempt's own: `abandon` ends the try from outside (the health monitor gave
 * up on its engine) and makes its failure the given engine failure, not a cancellation.
 */
export class Attempt {
  private readonly own = new AbortController();
  readonly signal: AbortSignal;
  private retryable: () => boolean = () => false;

  constructor(client: AbortSignal | undefined) {
    this.signal = client ? AbortSignal.any([client, this.own.signal]) : this.own.signal;
  }

  /** Set by the driver: whether a failure now would send the request to another engine. */
  arm(retryable: () => boolean): void {
    this.retryable = retryable;
  }

  /** A failure now would be retried elsewhere (nothing reached the client, an engine is left). */
  get wouldRetry(): boolean {
    return this.retryable();
  }

  abandon(why: string): void {
    if (!this.own.signal.aborted) this.own.abort(new EngineError('UNAVAILABLE', why));
  }

  /** What the try failed with: the reason it was abandoned, if it was. */
  failure(err: unknown): unknown {
    return this.own.signal.aborted ? this.own.signal.reason : err;
  }
}

/** Where one attempt runs, as the front chose it. */
export interface AttemptRoute {
  /** The attempt's events (run with `attempt.signal`). */
  readonly events: AsyncIterable<GenerateEvent>;
  readonly attempt: Attempt;
  /** Which engine(s) it went to, for the log. */
  readonly where: string;
  /** Were this attempt to fail, an engine would be left to send the request to. */
  alternative?(): boolean;
  /** It failed with an engine failure: the front sets the engine(s) aside. */
  failed?(err: unknown): void;
  /** It ended either way (the front's bookkeeping). */
  ended?(): void;
}

export interface RetryOptions {
  /** Off: the first engine failure is the request's failure (what `--retry off` asks). */
  readonly retry: boolean;
  readonly log?: (line: string) => void;
}

/**
 * Runs `request` (seed already fixed) on the attempts `next` gives — `next(n, lastError)`
 * returns (or resolves to) the n-th attempt, or null when no engine is left to try — and
 * yields its answer once.
 */
export async function* generateWithRetries(
  request: GenerateRequest,
  signal: AbortSignal | undefined,
  o: RetryOptions,
  next: (n: number, lastError: unknown) => AttemptRoute | null | Promise<AttemptRoute | null>,
): AsyncGenerator<GenerateEvent> {
  const guard = new ReplayGuard();
  const delivered = deliveryCheck(() => guard.handedOver);
  let lastError: unknown = new EngineError('UNAVAILABLE', 'no engine is available for the request');
  let previous = '';
  for (let n = 1; ; n++) {
    const route = await next(n, lastError);
    if (!route) throw lastError;
    if (n > 1) {
      guard.nextAttempt();
      noteRetry(n);
      o.log?.(
        `request ${request.requestId}: ${previous} failed before the client saw output ` +
          `(${(lastError as Error).message}); sent again to ${route.where}`,
      );
    }
    route.attempt.arm(() => o.retry && !delivered() && (route.alternative?.() ?? false));
    try {
      for await (const ev of route.events) {
        const out = guard.pass(ev);
        if (out) yield out;
      }
      return;
    } catch (e) {
      const err = route.attempt.failure(e);
      if (signal?.aborted || !isEngineFailure(err)) throw err;
      route.failed?.(err);
      if (!o.retry || delivered()) throw err;
      lastError = err;
      previous = route.where;
    } finally {
      route.ended?.();
    }
  }
}
