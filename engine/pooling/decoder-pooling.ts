/**
 * A decoder as a pooling backend, on the generation engine: Qwen3-Embedding's last-token
 * pooling (the final norm's output at each input's last token) and Qwen3-Reranker's yes/no
 * scoring (that token's logits of "no" and "yes"). Each input is one request of the engine's
 * own intake and scheduler (core-inputs.ts), whose last chunk runs as a state pass that samples
 * nothing (runner.ts, pooling-extension.ts), so the scheduler packs the inputs of every request into
 * its steps within its token budget, chunks a long one, and frees each one's KV as soon as
 * its state is out.
 */
import type { EngineCore } from '../engine-core.js';
import { EngineError } from '../errors.js';
import type { PoolingSpecInfo } from '../../native/native.js';
import type { PoolingBackend } from './backend.js';
import { poolingCard, type PoolingCardOptions } from './card.js';
import { coreInputs } from './core-inputs.js';
import type { PooledState } from './pooling-extension.js';

export interface DecoderPoolingOptions extends PoolingCardOptions {
  readonly pooling: PoolingSpecInfo;
  /** Qwen3-Reranker: the [no, yes] token ids whose logits score a pair; absent: an embedder. */
  readonly rerankTokens?: readonly [number, number];
  /** Unfinished inputs at most (past it a request fails RESOURCE_EXHAUSTED). */
  readonly maxQueued: number;
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
  // The last token's final-norm state, or its logits of [no, yes].
  const state: PooledState = rerank
    ? { pooled: { output: 'scores' }, pick: o.rerankTokens! }
    : { pooled: { output: 'pooled' } };
  const card = poolingCard(
    {
      hiddenSize: ext.hiddenSize,
      pooledDim: rerank ? 0 : ext.hiddenSize,
      pooling: o.pooling,
      labels: [],
      // The engine's sequences hold the prompt and the placeholder token its last step appends.
      maxTokens: info.maxSeqLen - 1,
      modelPath: path,
      decoder: true,
      rerank,
    },
    o,
  );
  return {
    card,
    vocabSize: info.vocabSize,
    architecture: info.architecture,
    dtype: info.dtype,
    contextLength: info.contextLength,
    tokenTypes: 0,
    passBudget: { maxTokens: info.maxPrefillTokens, maxInputs: info.maxBatchSize },
    inputs: coreInputs(core, { stateOf: () => state, maxQueued: o.maxQueued }),
    status: () => core.status(),
    dispose: () => core.close(),
  };
}
