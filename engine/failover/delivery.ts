/**
 * Whether any of an answer has reached the client yet: what decides if a request whose engine
 * failed may be sent again (engine-pool, the split prefill/decode coordinator). The HTTP
 * gateways run each request inside a scope (gateways/shared/delivery-scope.ts) that answers
 * it from the response itself — its headers went out — so a unary answer, which sends nothing
 * before its end, stays retryable to the last token, and a stream stops being retryable the
 * moment its 200 is written. Callers outside a scope (tests, in-process callers) get the
 * conservative answer: once an event was handed to the caller, it counts as seen.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface DeliveryScope {
  /** True once the client has received a byte of the answer (its headers). */
  readonly started: () => boolean;
  /** The request was sent again to another engine (`attempt`: 2 for the first retry). */
  readonly retried?: (attempt: number) => void;
}

const scope = new AsyncLocalStorage<DeliveryScope>();

/** Runs `fn` with `d` as the delivery scope of every engine call it makes. */
export function withDelivery<T>(d: DeliveryScope, fn: () => T): T {
  return scope.run(d, fn);
}

/**
 * The current request's answer to "has output reached the client?", kept for later (a health
 * monitor asks it outside the request's context). `handedOver`: whether events were already
 * given to the caller, the answer outside a scope.
 */
export function deliveryCheck(handedOver: () => boolean): () => boolean {
  const d = scope.getStore();
  return d ? d.started : handedOver;
}

/** Tells the scope (if any) that the request goes to its `attempt`-th engine. */
export function noteRetry(attempt: number): void {
  scope.getStore()?.retried?.(attempt);
}
