/**
 * A BERT-family encoder as a pooling backend: one native encoder context (no KV cache,
 * native/src/encoder/) behind the encoder's runner (encoder-runner.ts), driven by a generation
 * engine core of its own — the same intake, scheduler (token budget, batch size, priority
 * policy, queue limit), cancellation and metrics as a decoder's requests, over a KV pool of no
 * blocks (engine/kv-pool.ts). A step packs whole inputs end to end; an input is never split,
 * so the step budget holds the longest input the model takes.
 */
import { randomUUID } from 'node:crypto';
import {
  createEncoderContext,
  disposeEncoder,
  disposeEncoderContext,
  encoderInfo,
  loadEncoder,
  type EncoderInfo,
} from '../../native/native.js';
import { EngineCore } from '../engine-core.js';
import { resolveEngineOptions, type EngineOptions } from '../options.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { PoolingBackend } from './backend.js';
import { poolingCard, type PoolingCardOptions } from './card.js';
import { coreInputs } from './core-inputs.js';
import { EncoderRunner } from './encoder-runner.js';

export async function loadEncoderBackend(
  path: string,
  tokenizer: Tokenizer,
  options: PoolingCardOptions & {
    /** The engine's options (scheduling policy, batch size, step budget, queue...). */
    readonly engine: EngineOptions;
    readonly maxPassTokens: number;
    readonly maxPassInputs: number;
    /** Unfinished inputs at most (past it a request fails RESOURCE_EXHAUSTED). */
    readonly maxQueued: number;
    readonly threads: number;
    readonly modelName: string;
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
  // A step must hold the longest input the model takes (inputs are never split).
  const maxTokens = Math.max(options.maxPassTokens, card.maxInputTokens);
  const { maxModelLen: _, ...engine } = options.engine;
  const o = resolveEngineOptions({
    ...engine,
    // A sequence is its input and the one placeholder token its step "samples".
    maxSeqLen: card.maxInputTokens + 1,
    maxInputTokenLen: card.maxInputTokens,
    maxPrefillTokens: maxTokens,
    maxBatchSize: options.maxPassInputs,
    maxQueueSize: options.maxQueued,
    prefixCache: false,
  });
  const ctx = createEncoderContext(encoder, {
    maxBatchTokens: maxTokens,
    maxSeqs: o.maxBatchSize,
    threads: options.threads,
  });
  const width = { pooled: info.pooledDim, scores: info.labels.length, tokens: info.hiddenSize };
  const dtype = Object.entries(info.tensorTypes).sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown';
  const runner = new EncoderRunner(ctx, width);
  const core = new EngineCore({
    runner,
    tokenizer,
    options: o,
    info: {
      modelName: options.modelName,
      modelPath: path,
      architecture: info.architecture,
      vocabSize: info.vocabSize,
      contextLength: info.maxTokens,
      maxSeqLen: o.maxSeqLen,
      maxInputTokenLen: o.maxInputTokenLen,
      maxNewTokensCap: 1,
      maxBatchSize: o.maxBatchSize,
      maxPrefillTokens: o.maxPrefillTokens,
      blockSize: runner.blockSize,
      prefixCache: false,
      dtype,
      startedAt: Date.now(),
      device: 'cpu',
      deviceName: 'CPU',
      engineId: randomUUID(),
      modelFingerprint: '',
      images: false,
    },
    dispose: () => {
      disposeEncoderContext(ctx);
      disposeEncoder(encoder);
    },
  });
  return {
    card,
    vocabSize: info.vocabSize,
    architecture: info.architecture,
    dtype,
    contextLength: info.maxTokens,
    tokenTypes: info.tokenTypes,
    passBudget: { maxTokens, maxInputs: o.maxBatchSize },
    inputs: coreInputs(core, {
      stateOf: (x) => ({ pooled: { output: x.output, ...(x.typeIds ? { typeIds: x.typeIds } : {}) } }),
      maxQueued: options.maxQueued,
    }),
    status: () => core.status(),
    dispose: () => core.close(),
  };
}
