/**
 * A decoder as a pooling backend, on the generation engine: Qwen3-Embedding's last-token
 * pooling (the final norm's output at each input's last token) and Qwen3-Reranker's yes/no
 * scoring (that token's logits of "no" and "yes"). Each input is one request of the engine's
 * own intake and scheduler (greedy, one token, which the pooling extension takes instead of
 * decoding: pooling-extension.ts), so the scheduler packs the inputs of every request into
 * its steps within its token budget, chunks a long one, and frees each one's KV as soon as
 * its state is out.
 */
import { randomUUID } from 'node:crypto';
import type { EngineCore } from '../engine-core.js';
import { EngineError } from '../errors.js';
import type { PoolingSpecInfo } from '../../native/native.js';
import type { InputRunner, PoolingBackend } from './backend.js';
import { poolingCard, type PoolingCardOptions } from './card.js';
import type { PassInput } from './pass-queue.js';
import type { PooledState } from './pooling-extension.js';

export interface DecoderPoolingOptions extends PoolingCardOptions {
  readonly pooling: PoolingSpecInfo;
  /** Qwen3-Reranker: the [no, yes] token ids whose logits score a pair; absent: an embedder. */
  readonly rerankTokens?: readonly [number, number];
}

export async function decoderPooling(
  core: EngineCore,
  path: string,
  o: DecoderPoolingOptions,
): Promise<PoolingBackend> {
  const rerank = o.rerankTokens !== undefined;
  const ext = core.features.pooling;
  try {
    if (!rerank && (o.pooling.modes.length !== 1 || o.pooling.modes[0] !== 'lasttoken'))
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${path}: a decoder embeds by last-token pooling only; its files ask for ${o.pooling.modes.join('+') || 'none'}`,
        'model',
      );
    if (ext.hiddenSize === 0)
      throw new EngineError('INVALID_ARGUMENT', 'device: pooling models run on the CPU only', 'device');
  } catch (e) {
    await core.close();
    throw e;
  }
  const info = await core.info();
  const state: PooledState = rerank ? { kind: 'logits', tokens: o.rerankTokens! } : { kind: 'hidden' };
  const card = poolingCard(
    {
      hiddenSize: ext.hiddenSize,
      pooledDim: rerank ? 0 : ext.hiddenSize,
      pooling: o.pooling,
      labels: [],
      // The engine's sequences hold the prompt and the one token its last step samples.
      maxTokens: info.maxSeqLen - 1,
      modelPath: path,
      decoder: true,
      rerank,
    },
    o,
  );
  let waiting = 0;
  const runOne = async (input: PassInput, signal: AbortSignal | undefined): Promise<Float32Array> => {
    const id = `pool-${randomUUID()}`;
    const ticket = ext.expect(id, state);
    waiting++;
    try {
      const events = core.generate(
        {
          requestId: id,
          prompt: { kind: 'tokens', ids: Array.from(input.ids) },
          params: { maxNewTokens: 1, temperature: 0 },
        },
        signal,
      );
      for await (const ev of events)
        if (ev.type === 'finish' && ev.reason === 'error')
          throw new EngineError('INTERNAL', `pooling request failed: ${ev.error ?? 'unknown error'}`);
      if (!ticket.output) {
        if (signal?.aborted) throw new EngineError('CANCELLED', 'the request was cancelled');
        throw new EngineError('INTERNAL', 'a pooling request ended without its state');
      }
      return ticket.output;
    } finally {
      waiting--;
      ext.forget(id);
    }
  };
  const runner: InputRunner = {
    submit: (inputs, signal) => Promise.all(inputs.map((x) => runOne(x, signal))),
    get waiting() {
      return waiting;
    },
    get busy() {
      return waiting > 0;
    },
    get passes() {
      return ext.passes;
    },
  };
  return {
    card,
    vocabSize: info.vocabSize,
    architecture: info.architecture,
    dtype: info.dtype,
    contextLength: info.contextLength,
    tokenTypes: 0,
    passBudget: { maxTokens: info.maxPrefillTokens, maxInputs: info.maxBatchSize },
    inputRunner: () => runner,
    dispose: () => core.close(),
  };
}
