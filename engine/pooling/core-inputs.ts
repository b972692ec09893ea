/**
 * A pooling request's inputs as requests of a generation engine (engine-core.ts): each input
 * is one request of its intake — a token prompt, greedy, one token, which the pooling
 * extension takes instead of decoding (pooling-extension.ts) — so the scheduler packs the
 * inputs of every request into its steps within its token budget and batch size, orders them
 * by priority under the priority policy, and a cancelled request's inputs leave its queue.
 * A request's inputs are admitted together or refused together: past `maxQueued` unfinished
 * inputs a request fails RESOURCE_EXHAUSTED before any of them runs; one failed input cancels
 * the rest.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { EngineCore } from '../engine-core.js';
import { EngineError } from '../errors.js';
import type { InputRunner, PassInput, SubmitOptions } from './backend.js';
import type { PooledState } from './pooling-extension.js';

export function coreInputs(
  core: EngineCore,
  o: {
    /** What the engine returns for an input. */
    readonly stateOf: (input: PassInput) => PooledState;
    /** Unfinished inputs at most, over every request. */
    readonly maxQueued: number;
  },
): InputRunner {
  const ext = core.features.pooling;
  let unfinished = 0;
  const runOne = async (input: PassInput, s: SubmitOptions, signal: AbortSignal): Promise<Float32Array> => {
    const id = `pool-${randomUUID()}`;
    const ticket = ext.expect(id, o.stateOf(input));
    try {
      const events = core.generate(
        {
          requestId: id,
          prompt: { kind: 'tokens', ids: Array.from(input.ids) },
          params: { maxNewTokens: 1, temperature: 0, ...(s.priority ? { priority: s.priority } : {}) },
        },
        signal,
      );
      for await (const ev of events)
        if (ev.type === 'finish' && ev.reason === 'error')
          throw new EngineError('INTERNAL', `pooling request failed: ${ev.error ?? 'unknown error'}`);
      if (!ticket.output) {
        if (signal.aborted) throw new EngineError('CANCELLED', 'the request was cancelled');
        throw new EngineError('INTERNAL', 'a pooling request ended without its state');
      }
      return ticket.output;
    } finally {
      ext.forget(id);
    }
  };
  return {
    async submit(inputs, s = {}) {
      if (unfinished + inputs.length > o.maxQueued)
        throw new EngineError(
          'RESOURCE_EXHAUSTED',
          `the pooling queue is full (${unfinished} inputs unfinished, at most ${o.maxQueued}); retry later`,
        );
      unfinished += inputs.length;
      const all = new AbortController();
      setMaxListeners(inputs.length + 1, all.signal); // one per input's request: not a leak
      const onAbort = () => all.abort();
      if (s.signal?.aborted) all.abort();
      s.signal?.addEventListener('abort', onAbort, { once: true });
      let failure: { readonly error: unknown } | undefined;
      try {
        const outputs = await Promise.all(
          inputs.map((x) =>
            runOne(x, s, all.signal).catch((error: unknown) => {
              // The first failure is the request's; its other inputs leave the queue.
              failure ??= { error };
              all.abort();
              return null;
            }),
          ),
        );
        if (failure) throw failure.error;
        return outputs as Float32Array[];
      } finally {
        s.signal?.removeEventListener('abort', onAbort);
        unfinished -= inputs.length;
      }
    },
    get passes() {
      return ext.passes;
    },
  };
}
