/**
 * A BERT-family encoder as a pooling backend: one native encoder context (no KV cache) whose
 * passes take whole inputs packed end to end (native/src/encoder/).
 */
import {
  createEncoderContext,
  disposeEncoder,
  disposeEncoderContext,
  encode,
  encoderInfo,
  loadEncoder,
  type EncoderInfo,
} from '../../native/native.js';
import { PassQueue, type PassInput } from './pass-queue.js';
import type { PoolingBackend } from './backend.js';
import { poolingCard, type PoolingCardOptions } from './card.js';

export async function loadEncoderBackend(
  path: string,
  options: PoolingCardOptions & {
    readonly maxPassTokens: number;
    readonly maxPassInputs: number;
    readonly threads: number;
  },
): Promise<PoolingBackend> {
  const encoder = await loadEncoder(path);
  let info: EncoderInfo;
  try {
    info = encoderInfo(encoder);
  } catch (e) {
    disposeEncoder(encoder);
    throw e;
  }
  const card = poolingCard(
    {
      hiddenSize: info.hiddenSize,
      pooledDim: info.pooledDim,
      pooling: info.pooling,
      labels: info.labels,
      maxTokens: info.maxTokens,
      modelPath: path,
      decoder: false,
    },
    options,
  );
  // A pass must hold the longest input the model takes (inputs are never split).
  const maxTokens = Math.max(options.maxPassTokens, card.maxInputTokens);
  const ctx = createEncoderContext(encoder, {
    maxBatchTokens: maxTokens,
    maxSeqs: options.maxPassInputs,
    threads: options.threads,
  });
  const width = { pooled: info.pooledDim, scores: info.labels.length, tokens: info.hiddenSize };
  const budget = { maxTokens, maxInputs: options.maxPassInputs };
  const run = async (inputs: readonly PassInput[]): Promise<Float32Array[]> => {
    const output = inputs[0]!.output;
    const offsets = new Int32Array(inputs.length + 1);
    inputs.forEach((x, i) => (offsets[i + 1] = offsets[i]! + x.ids.length));
    const tokens = new Int32Array(offsets[inputs.length]!);
    const types = new Int32Array(tokens.length);
    inputs.forEach((x, i) => {
      tokens.set(x.ids, offsets[i]!);
      if (x.typeIds) types.set(x.typeIds, offsets[i]!);
    });
    const out = await encode(ctx, { tokens, tokenTypes: types, seqOffsets: offsets, output });
    return inputs.map((_, i) =>
      output === 'tokens'
        ? out.slice(offsets[i]! * width.tokens, offsets[i + 1]! * width.tokens)
        : out.slice(i * width[output], (i + 1) * width[output]),
    );
  };
  return {
    card,
    vocabSize: info.vocabSize,
    architecture: info.architecture,
    dtype: Object.entries(info.tensorTypes).sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown',
    contextLength: info.maxTokens,
    tokenTypes: info.tokenTypes,
    passBudget: budget,
    inputRunner: (maxQueued) => new PassQueue(run, { ...budget, maxQueued }),
    dispose(): void {
      disposeEncoderContext(ctx);
      disposeEncoder(encoder);
    },
  };
}
