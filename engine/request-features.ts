/**
 * The engine's request features and their order (engine/extension.ts is the interface they
 * implement): images, pooling (a decoder's embeddings and yes/no scores), structured output,
 * beam search, bad_words, prompt logprobs, split prefill/decode and, when configured,
 * speculative decoding, each from its own folder. This is the one place the engine's parts
 * meet the features by name: it builds them, lists them in the order the core calls their
 * hooks, assembles their part of `Engine.status()`, and gives out the handles the processes
 * that serve an engine, tests and benchmarks use.
 *
 * Order, where it matters: pooling takes its requests' states before any other extension
 * sees their items, and finishes them before the schedule; structured output checks before split prefill/decode (a bad
 * constraint is reported first) and plans before beam search (which refuses a grammar whose
 * output is checked); beam rounds are applied after a step before speculation learns from it,
 * and speculation hears of a finished sequence after split prefill/decode leased its blocks;
 * bad_words plans after beam search (whose beams' sampling it adds its bans to).
 */
import { deviceCapabilities, type VisionFamily } from '../native/native.js';
import { BadWordsExtension } from './bad-words/bad-words-extension.js';
import { BeamSearchExtension } from './beam/beam-extension.js';
import type { KvPool } from './kv-pool.js';
import type { ExtensionHost, RequestExtension } from './extension.js';
import { Disaggregation, type KvStatusFields } from './kv-transfer/disaggregation.js';
import type { EngineRole, RoleState } from './pd-types.js';
import { PoolingExtension } from './pooling/pooling-extension.js';
import type { ResolvedEngineOptions } from './options.js';
import { PromptLogprobsExtension } from './prompt-logprobs/prompt-logprobs-extension.js';
import type { EngineTokenizer } from './prompt.js';
import type { Runner } from './runner.js';
import { SpeculationExtension, type SpeculationConfig } from './speculative/speculation-extension.js';
import { StructuredOutput, type StructuredStats } from './structured/structured-extension.js';
import type { StructuredTuning } from './structured/tuning.js';
import type { EngineChat } from './tools/engine-chat.js';
import type { DecodeResult, EngineInfo, EngineStatus } from './types.js';
import type { ImageEncoder } from './vision/image-encoder.js';
import { VisionInputs } from './vision/vision-extension.js';

/** What the engine's builder may give the features beyond the engine's own parts. */
export interface FeatureDeps {
  /** Speculative decoding (engine/speculative/): the proposer and its settings; absent = off. */
  readonly speculation?: SpeculationConfig;
  /** Structured output's switches and mask-wait observer (a benchmark's); absent = the defaults. */
  readonly structuredTuning?: StructuredTuning;
  /** The model's vision-language family (ModelInfo.vision); absent = a text-only model. */
  readonly vision?: VisionFamily;
  /** A vision model's image encoder (engine/vision/); absent = images are refused. */
  readonly imageEncoder?: ImageEncoder;
}

/** What the features are built from. */
export interface FeatureInputs extends FeatureDeps {
  readonly runner: Runner;
  readonly tokenizer: EngineTokenizer;
  readonly options: ResolvedEngineOptions;
  readonly info: EngineInfo;
}

/** The features' handles: what a server wires to the engine, and what tests and benchmarks read. */
export interface FeatureHandles {
  /** Structured output's counters. */
  readonly structured: StructuredStats;
  /** Split prefill/decode: the engine-to-engine RPCs the gRPC server serves. */
  readonly disaggregation: Disaggregation;
  /** Pooling requests on this engine (engine/pooling/decoder-pooling.ts submits them). */
  readonly pooling: PoolingExtension;
}

/** The features' part of `Engine.status()`. */
export type FeatureStatus = KvStatusFields & Pick<EngineStatus, 'specDecode'>;

export interface RequestFeatures {
  /** In the order the core calls their hooks. */
  readonly extensions: readonly RequestExtension[];
  readonly handles: FeatureHandles;
  status(): FeatureStatus;
  /** `Engine.setRole`: split prefill/decode's. */
  setRole(role: EngineRole): RoleState;
  /** `Engine.decodeResults`: split prefill/decode's. */
  decodeResults(signal?: AbortSignal): AsyncIterable<DecodeResult>;
}

export function buildRequestFeatures(
  inputs: FeatureInputs,
  parts: { readonly host: ExtensionHost; readonly blocks: KvPool; readonly chat: EngineChat },
): RequestFeatures {
  const { options: o, info } = inputs;
  const { host } = parts;
  const runner = inputs.runner;
  const pooling = new PoolingExtension(
    runner.keepsKv === false || runner.states !== undefined,
    runner.states?.hiddenSize ?? 0,
    host,
  );
  const structured = new StructuredOutput({
    tokenizer: inputs.tokenizer,
    vocabSize: info.vocabSize,
    chat: parts.chat,
    host,
    nativeThreads: o.threads,
    tuning: inputs.structuredTuning,
  });
  const beams = new BeamSearchExtension(inputs.tokenizer, host);
  const promptLogprobs = new PromptLogprobsExtension(inputs.tokenizer, host, info.device);
  const disaggregation = new Disaggregation({
    kv: inputs.runner.kv,
    modelFingerprint: info.modelFingerprint,
    engineId: info.engineId,
    blocks: parts.blocks,
    maxSeqLen: o.maxSeqLen,
    options: { role: o.role, leaseTtlMs: o.kvLeaseMs, transferTimeoutMs: o.kvTransferTimeoutMs },
    host,
  });
  const speculation = inputs.speculation
    ? new SpeculationExtension(inputs.speculation, host, o.maxSeqLen, o.maxBatchSize)
    : null;
  return {
    // Images are checked first: a request whose images this model cannot take does no other work.
    extensions: [
      new VisionInputs({
        modelName: info.modelName,
        vision: inputs.vision,
        encoder: inputs.imageEncoder,
        tokenizer: inputs.tokenizer,
        maxInputTokenLen: o.maxInputTokenLen,
        maxPrefillTokens: o.maxPrefillTokens,
      }),
      pooling,
      structured,
      beams,
      new BadWordsExtension(inputs.tokenizer, deviceCapabilities(info.device).minTokens, info.device),
      promptLogprobs,
      disaggregation,
      ...(speculation ? [speculation] : []),
    ],
    handles: { structured, disaggregation, pooling },
    status: () => ({ ...(speculation?.status() ?? {}), ...disaggregation.status() }),
    setRole: (role) => disaggregation.setRole(role),
    decodeResults: (signal) => disaggregation.decodeResults(signal),
  };
}
