/**
 * The whole native surface of Prism. Nothing else imports the addon: every function the
 * C++ core exports is declared (and typed) here, and native errors are turned into typed
 * JS errors in `errors.ts`.
 *
 * Handles are opaque branded types: JS code can pass them back, never look inside.
 * Plans and results cross the boundary as typed arrays, not per-token JS objects.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkCpuBaseline } from './cpu-baseline.js';
import { wrapNativeError } from './errors.js';
// ---------------------------------------------------------------------------------------
// Opaque handles
// ---------------------------------------------------------------------------------------

/** A loaded model (weights mmapped or converted). Freed by `disposeModel` or by GC. */
export interface ModelHandle {
  readonly __brand: 'prism.Model';
}
/** A KV-cache pool + scratch buffers + thread pool bound to one model. */
export interface ContextHandle {
  readonly __brand: 'prism.Context';
}
/** A LoRA adapter's matrices, built for one model's shape (native/src/lora.h). */
export interface AdapterHandle {
  readonly __brand: 'prism.Adapter';
}

// ---------------------------------------------------------------------------------------
// Model description
// ---------------------------------------------------------------------------------------

export type Architecture = 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'gemma3' | 'phi3';

export interface ModelInfo {
  /** File (GGUF) or directory (Hugging Face safetensors) the model came from. */
  readonly path: string;
  readonly format: 'gguf' | 'safetensors';
  readonly architecture: Architecture;
  /**
   * The vision-language family this is the text model of ('idefics3': SmolVLM's folder, 'llava':
   * LLaVA-1.5's, 'gemma3': Gemma3ForConditionalGeneration's, whose decoder is this model and
   * whose image encoder loadVisionModel reads); absent: text only.
   */
  readonly vision?: VisionFamily;
  /** `general.name` for GGUF, the directory name for safetensors. */
  readonly name: string;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** Trained context length (`*.context_length` / `max_position_embeddings`). */
  readonly contextLength: number;
  readonly ropeTheta: number;
  readonly rmsNormEps: number;
  /** Output head shares the token-embedding matrix. */
  readonly tiedEmbeddings: boolean;
  /**
   * Sliding-window attention per layer: the token at position p of a layer with window W > 0
   * attends to positions p-W+1 .. p; 0 = the whole context (Gemma 3: five local layers, then
   * one global; Mistral: every layer).
   */
  readonly layerWindows: readonly number[];
  /** How the paged KV cache keeps the layers (native/src/kv_layout.h). */
  readonly kvLayout: KvLayout;
  /** Mixture of experts: experts per layer and how many each token uses (0 and 0 for a dense model). */
  readonly experts: number;
  readonly expertsUsed: number;
  /**
   * Bytes of weights read to decode one token (all layers + output head; for a mixture of
   * experts only the experts one token uses): the roofline's denominator.
   */
  readonly weightBytes: number;
  /** Every weight byte the model holds (what memory must fit); weightBytes for a dense model. */
  readonly residentWeightBytes: number;
  /**
   * Bytes of the huge-page chunks the model's repacked weights under 2 MiB were packed into at
   * load (native/src/kernels/weight_memory.h); 0 when none were (weights read in place).
   */
  readonly weightArenaBytes: number;
  /**
   * Activation rounding of the quantized matmuls: 'int8' (per-32 scales, from hidden 1024 up)
   * or 'int16' (smaller models); the switch PRISM_ACTIVATIONS=int8|int16 overrides at load.
   */
  readonly activations: 'int8' | 'int16';
  /** Count of tensors per storage type, e.g. { Q4_1: 210, F32: 61, Q8_0: 1 }. */
  readonly tensorTypes: Readonly<Record<string, number>>;
  /**
   * The native run-time switches (environment variables, docs/switches.md) as they stood when
   * the model was loaded, by name: e.g. `switches.PRISM_ISA.value` is the kernel family in use.
   */
  readonly switches: Readonly<Record<string, NativeSwitch>>;
  /** Where the weights are: 'cpu', or 'cuda:N' (loadModel's `device`). */
  readonly device: Device;
  /** The device in words: the CUDA card's name, or the CPU kernel family ('CPU (avx512)'). */
  readonly deviceName: string;
  /** CUDA: the decode kernels the model was loaded with (LoadModelOptions.cudaKernels). */
  readonly cudaKernels?: CudaKernels;
}

/** One run-time switch's value in effect (native/src/switches.h). */
export interface NativeSwitch {
  /** What the native core uses: e.g. 'avx512' for PRISM_ISA, '1' for PRISM_AMX, a path for PRISM_CACHE_DIR. */
  readonly value: string;
  /** 'environment': the variable set it; 'default': unset, or refused (then `warning` says why). */
  readonly source: 'environment' | 'default';
  readonly warning?: string;
}

/** One run-time switch as native/src/switches.h declares it (docs/switches.md is their table). */
export interface NativeSwitchSpec {
  /** The environment variable. */
  readonly name: string;
  /** Its values, '|'-separated for a choice ('avx512|avx2|reference', '0|1'), or what it holds. */
  readonly values: string;
  readonly byDefault: string;
  readonly read: 'once per process' | 'at each use' | 'by the CUDA library';
  readonly what: string;
}

/** A compute device: the CPU, or CUDA device N ('cuda' is 'cuda:0'). */
export type Device = 'cpu' | `cuda:${number}`;

/** One CUDA device as libprism_cuda.so sees it. */
export interface CudaDeviceInfo {
  readonly device: Device;
  readonly name: string;
  readonly totalBytes: number;
  readonly freeBytes: number;
  readonly multiprocessors: number;
  /** e.g. '9.0' (Hopper). */
  readonly computeCapability: string;
  readonly l2Bytes: number;
  /** From the memory clock and bus width (a datasheet figure); 0 when unknown. */
  readonly peakBandwidthGBs: number;
  /** The CPU emulation build of the tests (PRISM_CUDA_LIBRARY), not a GPU. */
  readonly emulated: boolean;
}

/** A GGUF metadata value as read from the file; arrays of strings/numbers become JS arrays. */
export type GgufValue = number | bigint | string | boolean | GgufValue[];

// ---------------------------------------------------------------------------------------
// Step plan and result (one mixed batch: prefill chunks + decode tokens)
// ---------------------------------------------------------------------------------------

/**
 * One forward step over S sequences and T tokens in total. Every per-sequence array has
 * length S; `*Offsets` arrays have length S+1 (CSR layout). Sequence s owns tokens
 * `tokens[seqTokenOffsets[s] .. seqTokenOffsets[s+1])` — a prefill chunk (which may start
 * after an already-cached prefix) or a single decode token — at absolute positions
 * `positions[...]`, and the KV blocks `blockTables[blockTableOffsets[s] .. blockTableOffsets[s+1])`
 * that cover positions 0 .. (last position of the step). Block b holds positions
 * [b*blockSize, (b+1)*blockSize) of that sequence. The step writes K/V of the new tokens into
 * those blocks and attends over every earlier position of the sequence (a sliding layer: over
 * its window only). A block is `kvLayout.pagesPerBlock` consecutive entries of the table, each
 * a page id of the pool (ModelInfo.kvLayout; one entry per block for most models).
 */
export interface StepPlan {
  readonly tokens: Int32Array;
  readonly positions: Int32Array;
  readonly seqTokenOffsets: Int32Array;
  readonly blockTableOffsets: Int32Array;
  readonly blockTables: Int32Array;
  /** KV page copies done before the forward pass, as [src0, dst0, src1, dst1, ...]. */
  readonly blockCopies?: Int32Array;

  // --- sampling (applied to the last token of each sequence with sample[s] = 1) ---
  readonly sample: Uint8Array;
  /** <= 0 means greedy (argmax). */
  readonly temperature: Float32Array;
  /** 0 means no top-k cut. */
  readonly topK: Int32Array;
  /** >= 1 means no top-p cut. */
  readonly topP: Float32Array;
  /** 1 means off (HF/CTRL-style: logit>0 ? logit/p : logit*p over penaltyTokens). */
  readonly repetitionPenalty: Float32Array;
  /** 0 means off (OpenAI-style, subtracted once per distinct token in penaltyTokens). */
  readonly presencePenalty: Float32Array;
  /** 0 means off (OpenAI-style, subtracted per occurrence in penaltyTokens). */
  readonly frequencyPenalty: Float32Array;
  /** Token history that the three penalties look at (prompt + generated), CSR by sequence. */
  readonly penaltyTokenOffsets: Int32Array;
  readonly penaltyTokens: Int32Array;
  /**
   * Optional, CSR [S+1] / [count]: tokens each sequence may not sample this step (min_tokens
   * holds back end-of-sequence and stop tokens); absent = none.
   */
  readonly suppressTokenOffsets?: Int32Array;
  readonly suppressTokens?: Int32Array;
  /**
   * Optional, CSR [S+1] / [count] / [count]: logit_bias, a value added to each listed token's
   * logit before the penalties; absent = none.
   */
  readonly logitBiasOffsets?: Int32Array;
  readonly logitBiasTokens?: Int32Array;
  readonly logitBiasValues?: Float32Array;
  /**
   * Optional, per sequence: min-p (0 = off: keep tokens with p >= minP * max p) and typical-p
   * (1 = off: locally typical sampling's mass), applied after top-k and top-p as Hugging
   * Face's warpers are. Absent = off for every sequence.
   */
  readonly minP?: Float32Array;
  readonly typicalP?: Float32Array;
  /**
   * Per-request seed and the number of tokens that request sampled before this step. The
   * random stream is a pure function of (seed, counter), so the same seed and prompt give
   * the same tokens whatever else is in the batch.
   */
  readonly seeds: BigUint64Array;
  readonly sampleCounters: Int32Array;
  /** Row of `allowedMask` for sequence s, or -1 for no constraint. */
  readonly allowedMaskRows: Int32Array;
  /**
   * Rows of ceil(vocabSize/32) words; bit (t & 31) of word (t >> 5) set = token t allowed.
   * Empty when `lateMaskRows` > 0.
   */
  readonly allowedMask: Int32Array;
  /**
   * Late masks (structured output): > 0 means `allowedMask` is empty and its `lateMaskRows`
   * rows come later through `supplyMasks`. The forward pass starts at once and sampling waits
   * for them, so the grammar computes the masks while the forward pass runs. Absent or 0:
   * the masks are in the plan (and the step never waits).
   */
  readonly lateMaskRows?: number;
  /** -1: no logprobs; 0: logprob of the chosen token; n > 0: also the top-n alternatives. */
  readonly topLogprobs: Int32Array;
  /**
   * 'none' (default): no logits returned. 'last': the (raw, pre-penalty) logits of the last
   * token of every sequence, [S × V]. 'all': of every token in the step, [T × V] (for tests
   * and prompt logprobs).
   */
  readonly returnLogits?: 'none' | 'last' | 'all';
  /**
   * LoRA slot per sequence (length S): -1 = base model, else a slot bound with
   * `setAdapterSlot`. Absent = every sequence uses the base model.
   */
  readonly adapterSlots?: Int32Array;
  /**
   * Speculative decoding (length S, optional): the last draftCounts[s] tokens of sequence s
   * are draft tokens to verify (sample[s] must be 1, and at least one token must come before
   * them). Position i of its last k+1 tokens' logits is sampled as output number
   * sampleCounters[s]+i would be without speculation (mask row allowedMaskRows[s]+i, the draft
   * tokens before it added to the penalty history, the same seeded draw); draft token i is
   * accepted when that sample equals it, and the first sample that does not (or the one after
   * every draft token) is the sequence's token. So the output is the same as without
   * speculation, greedy and seeded alike. A constrained sequence with k draft tokens owns mask
   * rows allowedMaskRows[s] .. +k.
   */
  readonly draftCounts?: Int32Array;
  /**
   * Prompt logprobs (native/src/prompt_scores.h), optional, both or neither: per token row
   * (length T) the token id its distribution is read at — the next prompt token — or -1 for a
   * row not scored; per sequence (length S) how many top alternatives its scored rows report
   * (0..1024). Scores come from the raw logits (no penalty, temperature or mask), the output
   * head run over the scored rows 64 at a time. Not on a CUDA device yet (refused).
   */
  readonly promptLogprobTargets?: Int32Array;
  readonly promptTopLogprobs?: Int32Array;
  /**
   * Run only the first `exitLayer` layers, then the final norm and the output head
   * (self-speculation's draft pass); the later layers' K/V are not written. Default: all.
   */
  readonly exitLayer?: number;
  /**
   * Placed embeddings (an image's rows), optional, all three or none: CSR by sequence
   * (`embedOffsets` [S+1]); per placement an absolute position among the sequence's positions
   * in this step (increasing within it), and `embedRows` [placements × hidden] whose row k
   * replaces that position's token-table row before layer 0 (unscaled: a model's embedding
   * scale is its table's). The token at a placed position still counts in the penalty history.
   * Not on a CUDA device yet (BackendCapabilities.placedEmbeddings).
   */
  readonly embedOffsets?: Int32Array;
  readonly embedPositions?: Int32Array;
  readonly embedRows?: Float32Array;
  /**
   * Bidirectional spans (Gemma 3's images: an image's tokens attend to each other both ways),
   * optional, both or none: CSR by sequence (`bidirectionalOffsets` [S+1]); per span a pair
   * [start, end) of absolute positions in `bidirectionalSpans`, increasing and disjoint within
   * a sequence. A query inside a span also sees the span's later positions; everything else
   * stays causal. A span must end within the sequence's positions in this step (an image is
   * never split across steps); it may start before them. Not on a CUDA device yet (refused).
   */
  readonly bidirectionalOffsets?: Int32Array;
  readonly bidirectionalSpans?: Int32Array;
}

export interface StepResult {
  /** Sampled token per sequence; -1 where sample[s] = 0. */
  readonly tokens: Int32Array;
  /** Log-probability of the sampled token (after penalties/temperature/mask); NaN where not asked. */
  readonly logprobs: Float32Array;
  /** Row stride of the two top-logprob arrays (= max topLogprobs[s] in the plan, ≥ 0). */
  readonly topLogprobsStride: number;
  /** [S × stride] token ids of the top alternatives, -1 padded. */
  readonly topLogprobIds: Int32Array;
  /** [S × stride] their log-probabilities, NaN padded. */
  readonly topLogprobValues: Float32Array;
  /** Present when the plan asked for logits. */
  readonly logits?: Float32Array;
  /** Plans with lateMaskRows: ms sampling waited for supplyMasks after the forward pass (0: they came first). */
  readonly lateMaskWaitMs?: number;
  /**
   * Present only when some sequence could not be sampled (e.g. its allowed-token mask
   * excludes every token): errors[s] is the reason, null for the sequences that succeeded.
   * Such a sequence has tokens[s] = -1; the other sequences' results are valid.
   */
  readonly errors?: ReadonlyArray<string | null>;
  /**
   * Plans with draftCounts: draft tokens accepted per sequence (`tokens[s]` is the token
   * sampled after them). The accepted* arrays have a slot per draft token of the plan, in
   * order (sequence s's start at the sum of the earlier draftCounts): the logprob (and top
   * alternatives, stride topLogprobsStride) of each accepted one; NaN / -1 past those.
   */
  readonly numAccepted?: Int32Array;
  readonly acceptedLogprobs?: Float32Array;
  readonly acceptedTopLogprobIds?: Int32Array;
  readonly acceptedTopLogprobValues?: Float32Array;
  /**
   * Plans with promptLogprobTargets: per token row [T] the target's logprob (NaN where not
   * scored) and rank (1 + tokens more likely; -1 where not scored), and [T × stride] the top
   * alternatives, best first (-1 / NaN padded).
   */
  readonly promptLogprobs?: Float32Array;
  readonly promptLogprobRanks?: Int32Array;
  readonly promptTopLogprobsStride?: number;
  readonly promptTopLogprobIds?: Int32Array;
  readonly promptTopLogprobValues?: Float32Array;
}

/**
 * The paged KV cache's layout (native/src/kv_layout.h). The pool is made of pages, each the K/V
 * of `pageLayers` layers for one block of positions. Layers that attend alike form one group;
 * a model that mixes global and sliding-window layers (Gemma 3) has two, global first, so the
 * sliding group's pages can be released behind its window while the global group keeps the
 * whole context. One block of a sequence is `pagesPerBlock` table entries: each group's pages
 * in group order.
 */
export interface KvLayout {
  readonly pageLayers: number;
  readonly pagesPerBlock: number;
  /** window 0: the group attends to the whole context; pages: entries one block takes. */
  readonly groups: readonly { readonly window: number; readonly pages: number }[];
}

export interface ContextOptions {
  /** Number of pages in the KV pool (= blocks when ModelInfo.kvLayout.pagesPerBlock is 1). */
  readonly kvBlocks: number;
  /** Tokens per KV block. */
  readonly blockSize: number;
  /** Upper bound on T (tokens per step); sizes the scratch buffers once. */
  readonly maxBatchTokens: number;
  /** Upper bound on S (sequences per step). */
  readonly maxSeqs: number;
  /** Threads of the context's own pool (including the stepping thread); default: cores. */
  readonly threads?: number;
  /** LoRA slots (adapters resident at once); default 0 = no adapters. */
  readonly maxLoras?: number;
  /** Largest adapter rank a slot takes (sizes the shrink scratch); >= 1 when maxLoras > 0. */
  readonly maxLoraRank?: number;
  /**
   * How single-token decode picks its prefetch distance/hint, tile height and idle prefetch
   * on this host (native/src/decode_tuning/choose.h): 'host' (the built-in constants with
   * the tile height and prefetch hint measured faster on this kind of CPU), 'off' (the built-in constants),
   * 'auto' (cached per CPU, threads and model shape, else measured for about a second at
   * creation, starting from the host default, when the weights exceed the last-level cache;
   * otherwise the host default), 'measure' (measure again) or a
   * setting such as 'prefetch=t1:2,rows=8,idle=off'. Default: the PRISM_DECODE_TUNING
   * environment variable, else 'host'. No setting changes a result, only the speed.
   */
  readonly decodeTuning?: string;
}

export type LoraTargetName = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';

/** One adapted linear layer: y[out] += scale · B · (A · x). */
export interface AdapterLayer {
  readonly layer: number;
  readonly target: LoraTargetName;
  readonly rank: number;
  readonly scale: number;
  /** [rank × in], row-major (PEFT lora_A.weight). */
  readonly a: Float32Array;
  /** [out × rank], row-major (PEFT lora_B.weight), rows in Hugging Face order (the addon applies GGUF llama's Q/K permutation). */
  readonly b: Float32Array;
}

export interface AdapterInfo {
  /** Largest rank of any adapted layer. */
  readonly rank: number;
  readonly bytes: number;
  readonly storage: 'F32' | 'F16';
  /** Number of (layer, target) pairs the adapter changes. */
  readonly adaptedLinears: number;
}

export interface ContextInfo {
  /** Pages in the KV pool (ContextOptions.kvBlocks). */
  readonly kvBlocks: number;
  readonly blockSize: number;
  readonly kvBytes: number;
  readonly threads: number;
  /** Kernel family chosen at run time: 'avx512' | 'avx2' | 'reference', or 'cuda'. */
  readonly isa: string;
  /** Where the KV cache and the step run (the model's device). */
  readonly device: Device;
  readonly deviceName: string;
  /** CUDA: milliseconds the device took for the last step (forward + sampling); else absent. */
  readonly lastStepDeviceMs?: number;
  /**
   * CUDA: kernels the last step's forward pass launched (the kernel nodes of the decode graph
   * it replayed, or those counted as it ran; sampling not included); else absent.
   */
  readonly lastStepLaunches?: number;
  /** CPU contexts: the decode tuning in use and how it was chosen (ContextOptions.decodeTuning). */
  readonly decodeTuning?: DecodeTuningInfo;
}

export interface DecodeTuningInfo {
  /** The setting, e.g. 'prefetch=nta:1,rows=auto,idle=on'. */
  readonly setting: string;
  /**
   * 'host' | 'off' | 'given' | 'cached' | 'measured' | 'fits-cache' (weights within the last-level
   * cache: not measured; the host default is used) | 'inconclusive' (the machine was too noisy
   * to tell settings apart; the host default is used and nothing is cached).
   */
  readonly source: string;
  /** The race's stages (candidates, paired ratios, wins), or when the cached entry was measured. */
  readonly detail: string;
  /** Wall time of the measurement at creation (0 when nothing was measured). */
  readonly measuredMs: number;
  /** Paired step-time ratio of the setting to the host default, as measured (1 when not). */
  readonly ratioToDefault: number;
  /** The cache file consulted ('' when none). */
  readonly cachePath: string;
}

export interface HostInfo {
  /** Vendor, family, model, stepping and brand: the CPU part of the decode-tuning cache key. */
  readonly cpu: string;
  /** One line: the CPU, L1d/L2/L3 sizes and the transparent-huge-page mode. */
  readonly description: string;
  readonly l1dBytes: number;
  readonly l2Bytes: number;
  readonly l3Bytes: number;
  /** The selected mode of /sys/kernel/mm/transparent_hugepage/enabled ('always' | 'madvise' | 'never'). */
  readonly transparentHugePages: string;
  /** This process's anonymous memory on huge pages now (repacked weights among it); -1 if unknown. */
  readonly anonHugeBytes: number;
}

/**
 * What a KV transfer between two engines must agree on, besides the model itself: one layer
 * of one block is K then V of every KV head, `blockSize × headDim` values of `dtype` each
 * (`blockLayerBytes` in all), little-endian.
 */
export interface KvTransferLayout {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly blockSize: number;
  readonly kvBlocks: number;
  readonly dtype: 'f16';
  readonly blockLayerBytes: number;
}

export interface CpuFeatures {
  readonly avx2: boolean;
  readonly fma: boolean;
  readonly f16c: boolean;
  readonly avx512f: boolean;
  readonly avx512bw: boolean;
  readonly avx512vl: boolean;
  readonly avx512vnni: boolean;
  readonly avx512bf16: boolean;
  /** AMX-TILE + AMX-INT8 present and granted by the OS (the "amx" test family runs). */
  readonly amx: boolean;
  /** Batches of 16+ tokens run on AMX tiles (amx, avx512 selected, PRISM_AMX not 0). */
  readonly amxPrefill: boolean;
  /** What the kernels use: 'avx512' | 'avx2' | 'reference' (PRISM_ISA overrides). */
  readonly selected: string;
}

/** Kernel storage types (GGML numbering names), in the order the kernel tests walk them. */
export const TENSOR_TYPES = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q4_1',
  'Q4_K',
  'Q6_K',
  'Q5_0',
  'Q5_1',
  'Q5_K',
  'Q3_K',
  'Q2_K',
  'IQ4_NL',
  'IQ4_XS',
] as const;
export type TensorType = (typeof TENSOR_TYPES)[number];

// ---------------------------------------------------------------------------------------
// The addon's raw exports
// ---------------------------------------------------------------------------------------

// Exported as a type for bench/kernels/load-build.ts, with which the kernel scripts load several builds
// of the addon at once.
export interface NativeAddon {
  readGgufMetadata(path: string): Record<string, GgufValue>;
  loadModel(path: string, onProgress: ((fraction: number) => void) | undefined): Promise<ModelHandle>;
  modelInfo(model: ModelHandle): ModelInfo;
  disposeModel(model: ModelHandle): void;
  createContext(model: ModelHandle, options: ContextOptions): ContextHandle;
  contextInfo(ctx: ContextHandle): ContextInfo;
  disposeContext(ctx: ContextHandle): void;
  step(ctx: ContextHandle, plan: StepPlan): Promise<StepResult>;
  /** Fault test hook: the next `count` steps on `ctx` throw a C++ exception mid-forward (0 disarms). */
  failNextStepsForTest(ctx: ContextHandle, count: number): void;
  /** Fault test hook: the next step on `ctx` sleeps `ms` after layer 0, then finishes normally. */
  stallNextStepForTest(ctx: ContextHandle, ms: number): void;
  supplyMasks(ctx: ContextHandle, masks: Int32Array | null): boolean;
  cpuFeatures(): CpuFeatures;
  /**
   * Kernel test hook: y[n × rows] = x[n × cols] · Wᵀ with W given in `type` storage, using `isa`
   * ("amx" | "avx512" | "avx2" | "reference"; a "+int16" suffix selects int16 activations;
   * "amx" is avx512 with the AMX-served int8 layouts on the tiles for any n; "q4xv-scalar+int16" /
   * "q8xv-scalar+int16" the scalar statement of the exact-integer int16 layouts, and
   * "q4xv-amx+int16" / "q8xv-amx+int16" their AMX-INT8 kernels for any n; "avx2-gemm" /
   * "avx512-gemm" that family's matmulManyTokens, whose float weights run the encoders' GEMM).
   */
  matmulForTest(
    type: TensorType,
    weights: Uint8Array,
    rows: number,
    cols: number,
    x: Float32Array,
    n: number,
    isa: string,
  ): Float32Array;
  /** Kernel test hook: quantize a float matrix [rows × cols] into `type` storage (reference quantizer). */
  quantizeForTest(type: TensorType, values: Float32Array, rows: number, cols: number): Uint8Array;
  /** Kernel test hook: dequantize `type` storage into floats. */
  dequantizeForTest(type: TensorType, data: Uint8Array, rows: number, cols: number): Float32Array;
  /** Test hook: the token-table rows [ids × hidden] a CPU model's forward pass looks up (unscaled). */
  embeddingRowsForTest(model: ModelHandle, ids: Int32Array): Float32Array;
  /** Kernel test hook: calls of the 4-bit int16 AMX kernel so far in this process (kernels/amx/q4xv_amx.h). */
  q4xvAmxCallsForTest(): number;
  /**
   * Kernel test hook: the encoders' bidirectional attention (encoder/packed_attention.h) on
   * qkv [T × 3 · heads · headDim] of inputs packed at `seqOffsets`, on its own pool of
   * `threads`, on the JS thread; returns [T × heads · headDim].
   */
  attentionForTest(
    qkv: Float32Array,
    seqOffsets: Int32Array,
    heads: number,
    headDim: number,
    threads: number,
  ): Float32Array;
  /** Streams `bytes` of memory `passes` times with all cores; returns the fastest pass in GB/s (the roofline). */
  measureMemoryBandwidth(bytes: number, passes: number): number;
  sustainedReadRate(bytes: number, passes: number, threads: number): number;
  releaseReadBuffer(): void;
  hostInfo(): HostInfo;
  nativeSwitches(): NativeSwitchSpec[];
  cpuCapabilities(): BackendCapabilities;
  createAdapter(model: ModelHandle, layers: readonly AdapterLayer[], storage: 'F32' | 'F16'): AdapterHandle;
  createAdapterAsync(
    model: ModelHandle,
    layers: readonly AdapterLayer[],
    storage: 'F32' | 'F16',
  ): Promise<AdapterHandle>;
  adapterInfo(adapter: AdapterHandle): AdapterInfo;
  disposeAdapter(adapter: AdapterHandle): void;
  setAdapterSlot(ctx: ContextHandle, slot: number, adapter: AdapterHandle | null): void;
  kvLayout(ctx: ContextHandle): KvTransferLayout;
  readKvBlock(ctx: ContextHandle, block: number, layerStart: number, layerCount: number): Uint8Array;
  writeKvBlock(ctx: ContextHandle, block: number, layerStart: number, data: Uint8Array): void;

  // The CUDA backend (native/cuda/host/device_addon.cc, loading libprism_cuda.so at run time).
  cudaCapabilities(): BackendCapabilities;
  /** Throws naming the library and why it cannot be used (not built, no driver, ...). */
  cudaDevices(): CudaDeviceInfo[];
  /** The device's memory read rate in GB/s (the best of `passes` reads of `bytes`). */
  measureDeviceBandwidth(device: number, bytes: number, passes: number): Promise<number>;
  loadDeviceModel(
    path: string,
    device: number,
    onProgress: ((fraction: number) => void) | undefined,
    kernels: number,
  ): Promise<ModelHandle>;
  deviceModelInfo(model: ModelHandle): ModelInfo & { deviceBytes: number; cudaKernels: CudaKernels };
  disposeDeviceModel(model: ModelHandle): void;
  createDeviceContext(model: ModelHandle, options: ContextOptions): ContextHandle;
  deviceContextInfo(ctx: ContextHandle): ContextInfo;
  disposeDeviceContext(ctx: ContextHandle): void;
  deviceStep(ctx: ContextHandle, plan: StepPlan): Promise<StepResult>;
  deviceSupplyMasks(ctx: ContextHandle, masks: Int32Array | null): boolean;
  deviceFailNextStepsForTest(ctx: ContextHandle, count: number): void;
}

function findAddon(file = 'prism_native.node'): string {
  const here = dirname(fileURLToPath(import.meta.url));
  // Source tree (tsx) is native/, compiled tree is dist/native/.
  for (const root of [join(here, '..'), join(here, '..', '..')]) {
    for (const kind of ['Release', 'Debug']) {
      const candidate = join(root, 'build', kind, file);
      if (existsSync(candidate)) return candidate;
    }
  }
  throw new Error('prism native addon not built: run `npm install` (it compiles native/ with node-gyp)');
}

// Before loading: the addon is compiled for AVX2 + FMA + F16C + BMI2 (cpu-baseline.ts).
checkCpuBaseline();
const addon = createRequire(import.meta.url)(findAddon()) as NativeAddon;

// ---------------------------------------------------------------------------------------
// Public API (thin wrappers so that native errors become typed errors in one place)
// ---------------------------------------------------------------------------------------

export function readGgufMetadata(path: string): Record<string, GgufValue> {
  return wrapNativeError(() => addon.readGgufMetadata(path));
}

/** Parses a device name: 'cpu', 'cuda' (device 0) or 'cuda:N'. Throws RangeError otherwise. */
export function parseDevice(device: string): Device {
  if (device === 'cpu') return 'cpu';
  if (device === 'cuda') return 'cuda:0';
  const m = /^cuda:(\d{1,3})$/.exec(device);
  if (m) return `cuda:${Number(m[1])}`;
  throw new RangeError(`device '${device}' must be 'cpu', 'cuda' or 'cuda:N'`);
}

function cudaIndex(device: Device): number {
  return Number(device.slice('cuda:'.length));
}

/**
 * The CUDA decode kernels (native/cuda/prism_cuda.h, PC_KERNELS_*): 'legacy', the issue-29
 * set, or 'fast' (the fused decode layer, native/cuda/src/gemv_fast.h). 'legacy' stays the
 * default until the fast set has run green on a GPU (scripts/device-check.sh runs both).
 */
export type CudaKernels = 'legacy' | 'fast';
export const CUDA_KERNELS: readonly CudaKernels[] = ['legacy', 'fast'];

// ---------------------------------------------------------------------------------------
// Backends: one object per device kind
// ---------------------------------------------------------------------------------------

/**
 * What a backend serves beyond the step-plan contract every one of them takes, as the native
 * side declares it (native/src/backend_capabilities.h, beside the code that refuses the
 * rest): the engine asks these (deviceCapabilities) instead of naming a device.
 */
export interface BackendCapabilities {
  /** LoRA adapters: createAdapter, setAdapterSlot and a plan's adapterSlots. */
  readonly lora: boolean;
  /** Speculative decoding: a plan's draftCounts, verified in the sampler. */
  readonly verify: boolean;
  /** A plan's exitLayer (layer-skip speculation's draft pass). */
  readonly earlyExit: boolean;
  /** Split prefill/decode: kvTransferLayout, readKvBlock and writeKvBlock. */
  readonly kvTransfer: boolean;
  /** A plan's suppressTokens (min_tokens). */
  readonly minTokens: boolean;
  /** Mixture-of-experts layers. */
  readonly experts: boolean;
  /** Sliding-window layers mixed with global ones (the KV cache's layer groups). */
  readonly mixedWindows: boolean;
  /** A plan's logitBias, minP and typicalP (logit_bias, min_p, typical_p). */
  readonly samplerWarpers: boolean;
  /** hiddenStep: a decoder step answering final-norm hidden states (decoder pooling). */
  readonly hiddenStates: boolean;
  /** A plan's embedOffsets / embedPositions / embedRows: given rows in place of token rows (images). */
  readonly placedEmbeddings: boolean;
  readonly architectures: readonly Architecture[];
  readonly tensorTypes: readonly TensorType[];
}

/**
 * One device kind's side of the native surface: the calls whose native functions differ per
 * device. The functions below find a handle's backend (backendOf) instead of testing its
 * device.
 */
interface Backend extends Pick<
  NativeAddon,
  'modelInfo' | 'disposeModel' | 'createContext' | 'contextInfo' | 'disposeContext' | 'step' | 'supplyMasks'
> {
  readonly capabilities: BackendCapabilities;
  /** In refusals: 'the CPU', 'a CUDA device'. */
  readonly where: string;
  loadModel(
    path: string,
    device: Device,
    onProgress: ((fraction: number) => void) | undefined,
    cudaKernels: CudaKernels | undefined,
  ): Promise<ModelHandle>;
  failNextSteps: NativeAddon['failNextStepsForTest'];
  stallNextStep: NativeAddon['stallNextStepForTest'];
}

const cpuBackend: Backend = {
  capabilities: addon.cpuCapabilities(),
  where: 'the CPU',
  loadModel: (path, _device, onProgress, cudaKernels) => {
    if (cudaKernels !== undefined)
      throw new RangeError('cudaKernels chooses CUDA kernels: it needs a CUDA device, not the CPU');
    return addon.loadModel(path, onProgress);
  },
  modelInfo: (model) => ({
    ...addon.modelInfo(model),
    device: 'cpu',
    deviceName: `CPU (${addon.cpuFeatures().selected})`,
  }),
  disposeModel: (model) => addon.disposeModel(model),
  createContext: (model, options) => addon.createContext(model, options),
  contextInfo: (ctx) => {
    const info = addon.contextInfo(ctx);
    return { ...info, device: 'cpu', deviceName: `CPU (${info.isa})` };
  },
  disposeContext: (ctx) => addon.disposeContext(ctx),
  step: (ctx, plan) => addon.step(ctx, plan),
  supplyMasks: (ctx, masks) => addon.supplyMasks(ctx, masks),
  failNextSteps: (ctx, count) => addon.failNextStepsForTest(ctx, count),
  stallNextStep: (ctx, ms) => addon.stallNextStepForTest(ctx, ms),
};

const cudaBackend: Backend = {
  capabilities: addon.cudaCapabilities(),
  where: 'a CUDA device',
  loadModel: (path, device, onProgress, cudaKernels) =>
    addon.loadDeviceModel(path, cudaIndex(device), onProgress, CUDA_KERNELS.indexOf(cudaKernels ?? 'legacy')),
  modelInfo: (model) => addon.deviceModelInfo(model),
  disposeModel: (model) => addon.disposeDeviceModel(model),
  createContext: (model, options) => addon.createDeviceContext(model, options),
  contextInfo: (ctx) => addon.deviceContextInfo(ctx),
  disposeContext: (ctx) => addon.disposeDeviceContext(ctx),
  step: (ctx, plan) => addon.deviceStep(ctx, plan),
  supplyMasks: (ctx, masks) => addon.deviceSupplyMasks(ctx, masks),
  failNextSteps: (ctx, count) => addon.deviceFailNextStepsForTest(ctx, count),
  stallNextStep: () => {
    throw new Error('stallNextStep: CPU contexts only');
  },
};

function backendFor(device: Device): Backend {
  return device === 'cpu' ? cpuBackend : cudaBackend;
}

/**
 * What the backend of `device` serves ('cpu', 'cuda' or 'cuda:N'; the CPU's when absent).
 * Throws RangeError for a malformed device name.
 */
export function deviceCapabilities(device: string | undefined): BackendCapabilities {
  return backendFor(parseDevice(device ?? 'cpu')).capabilities;
}

// The backend behind each model and context handle (both are the same opaque types on every
// device; a handle this module did not make is taken for the CPU's, whose type tags refuse it).
const handleBackends = new WeakMap<object, Backend>();
const backendOf = (h: ModelHandle | ContextHandle): Backend => handleBackends.get(h as object) ?? cpuBackend;

export interface LoadModelOptions {
  /** 'cpu' (default), or a CUDA device: the weights are uploaded there. */
  readonly device?: Device;
  /** CUDA only: the decode kernels (default 'legacy'); refused for the CPU. */
  readonly cudaKernels?: CudaKernels;
}

export async function loadModel(
  path: string,
  onProgress?: (fraction: number) => void,
  options: LoadModelOptions = {},
): Promise<ModelHandle> {
  const device = options.device ?? 'cpu';
  const kernels = options.cudaKernels ?? 'legacy';
  if (!CUDA_KERNELS.includes(kernels))
    throw new RangeError(`cudaKernels must be one of ${CUDA_KERNELS.join(', ')}, got '${String(kernels)}'`);
  const backend = backendFor(device);
  const model = await wrapNativeError(() => backend.loadModel(path, device, onProgress, options.cudaKernels));
  handleBackends.set(model as object, backend);
  return model;
}

export function modelInfo(model: ModelHandle): ModelInfo {
  return backendOf(model).modelInfo(model);
}

export function disposeModel(model: ModelHandle): void {
  backendOf(model).disposeModel(model);
}

/** A context on the model's device (its KV cache there too). */
export function createContext(model: ModelHandle, options: ContextOptions): ContextHandle {
  const backend = backendOf(model);
  const ctx = wrapNativeError(() => backend.createContext(model, options));
  handleBackends.set(ctx as object, backend);
  return ctx;
}

export function contextInfo(ctx: ContextHandle): ContextInfo {
  return backendOf(ctx).contextInfo(ctx);
}

export function disposeContext(ctx: ContextHandle): void {
  backendOf(ctx).disposeContext(ctx);
}

/**
 * Runs one mixed batch off the JS thread. At most one step per context may be in flight.
 * A plan that breaks a rule rejects (TypeError/RangeError naming the field) rather than
 * throwing synchronously, so callers handle every failure the same way.
 */
export async function step(ctx: ContextHandle, plan: StepPlan): Promise<StepResult> {
  return wrapNativeError(() => backendOf(ctx).step(ctx, plan));
}

/**
 * Hands the running step the `lateMaskRows` × ceil(vocabSize/32) words its plan announced;
 * its sampling starts once they are in (they are copied). `null`: they will not come, and the
 * step rejects. Returns false when no step waits for masks (e.g. its plan was refused);
 * throws RangeError for a wrong length (the step keeps waiting: supply again or null).
 */
export function supplyMasks(ctx: ContextHandle, masks: Int32Array | null): boolean {
  return wrapNativeError(() => backendOf(ctx).supplyMasks(ctx, masks));
}

const loraRefusal = (b: Backend) => new RangeError(`LoRA adapters are not supported on ${b.where} yet`);

/**
 * Copies an adapter's matrices into native storage (F32, or F16 to halve their memory
 * traffic), checking every shape against the model. Throws RangeError naming the layer.
 */
export function createAdapter(
  model: ModelHandle,
  layers: readonly AdapterLayer[],
  storage: 'F32' | 'F16' = 'F32',
): AdapterHandle {
  if (!backendOf(model).capabilities.lora) throw loraRefusal(backendOf(model));
  return wrapNativeError(() => addon.createAdapter(model, layers, storage));
}

/** createAdapter on a worker thread (a dynamic load must not stall the event loop). */
export function createAdapterAsync(
  model: ModelHandle,
  layers: readonly AdapterLayer[],
  storage: 'F32' | 'F16' = 'F16',
): Promise<AdapterHandle> {
  if (!backendOf(model).capabilities.lora) return Promise.reject(loraRefusal(backendOf(model)));
  return wrapNativeError(() => addon.createAdapterAsync(model, layers, storage));
}

export function adapterInfo(adapter: AdapterHandle): AdapterInfo {
  return addon.adapterInfo(adapter);
}

/** Frees the handle's reference; a slot still holding the adapter keeps it alive. */
export function disposeAdapter(adapter: AdapterHandle): void {
  addon.disposeAdapter(adapter);
}

/**
 * Binds `adapter` to `slot` (null unbinds). While a step runs, only slots that step does
 * not use may change (it throws for the others); a plan's adapterSlots must name bound slots.
 */
export function setAdapterSlot(ctx: ContextHandle, slot: number, adapter: AdapterHandle | null): void {
  if (!backendOf(ctx).capabilities.lora) throw loraRefusal(backendOf(ctx));
  wrapNativeError(() => addon.setAdapterSlot(ctx, slot, adapter));
}

// A backend without KV transfer refuses the three calls by name.
function checkKvTransfer(ctx: ContextHandle): void {
  const b = backendOf(ctx);
  if (!b.capabilities.kvTransfer)
    throw new RangeError(`moving KV blocks between engines is not supported on ${b.where} yet`);
}

export function kvTransferLayout(ctx: ContextHandle): KvTransferLayout {
  checkKvTransfer(ctx);
  return addon.kvLayout(ctx);
}

/**
 * Copies layers [layerStart, layerStart + layerCount) of KV block `block` out of the cache
 * (`layerCount × blockLayerBytes` bytes). Block and layer ranges are checked (RangeError).
 * Only blocks that no running step writes may be read (a leased block: engine/kv-transfer/).
 */
export function readKvBlock(
  ctx: ContextHandle,
  block: number,
  layerStart: number,
  layerCount: number,
): Uint8Array {
  checkKvTransfer(ctx);
  return wrapNativeError(() => addon.readKvBlock(ctx, block, layerStart, layerCount));
}

/**
 * Writes whole layers from `layerStart` into KV block `block` (data: a positive multiple of
 * `blockLayerBytes` that ends at or before the last layer; RangeError otherwise). Only a block
 * that no running step reads or writes may be written (one just allocated for a transfer).
 */
export function writeKvBlock(ctx: ContextHandle, block: number, layerStart: number, data: Uint8Array): void {
  checkKvTransfer(ctx);
  wrapNativeError(() => addon.writeKvBlock(ctx, block, layerStart, data));
}

export function cpuFeatures(): CpuFeatures {
  return addon.cpuFeatures();
}

/**
 * The CUDA devices libprism_cuda.so sees. Throws an Error naming the library and the reason
 * when CUDA cannot be used here (the library was not built: no nvcc at install time; no
 * driver; PRISM_CUDA_LIBRARY names another file).
 */
export function cudaDevices(): CudaDeviceInfo[] {
  return wrapNativeError(() => addon.cudaDevices());
}

/** The CUDA device's read bandwidth in GB/s (the decode roofline's denominator). */
export function measureDeviceBandwidth(device: Device, bytes = 2 ** 31, passes = 20): Promise<number> {
  if (device === 'cpu') throw new RangeError("measureDeviceBandwidth: device must be 'cuda:N'");
  return wrapNativeError(() => addon.measureDeviceBandwidth(cudaIndex(device), bytes, passes));
}

export function measureMemoryBandwidth(bytes = 256 * 1024 * 1024, passes = 50): number {
  return addon.measureMemoryBandwidth(bytes, passes);
}

/**
 * The machine's sustained read rate right now: the median GB/s of `passes` reads of a
 * `bytes` buffer by `threads` threads (use the decode's thread count). Set against a
 * decode step taken in the same seconds it says how much of the memory's rate decode uses;
 * the peak of measureMemoryBandwidth is not that. The buffer stays allocated between calls
 * until releaseReadBuffer().
 */
export function sustainedReadRate(bytes = 2 ** 30, passes = 3, threads = 2): number {
  return wrapNativeError(() => addon.sustainedReadRate(bytes, passes, threads));
}

export function releaseReadBuffer(): void {
  addon.releaseReadBuffer();
}

/** The CPU, its caches and the huge-page state: what the decode tuning is keyed by. */
export function hostInfo(): HostInfo {
  return addon.hostInfo();
}

/** Every run-time switch the native core reads (its values in effect: ModelInfo.switches). */
export function nativeSwitches(): NativeSwitchSpec[] {
  return addon.nativeSwitches();
}

export const kernelTestHooks = {
  matmul: addon.matmulForTest.bind(addon),
  quantize: addon.quantizeForTest.bind(addon),
  dequantize: addon.dequantizeForTest.bind(addon),
  embeddingRows: (model: ModelHandle, ids: Int32Array): Float32Array =>
    wrapNativeError(() => addon.embeddingRowsForTest(model, ids)),
  q4xvAmxCalls: addon.q4xvAmxCallsForTest.bind(addon),
  attention: addon.attentionForTest.bind(addon),
};

/**
 * Fault injection for tests only (no route, flag or config reaches it): makes the next
 * `count` steps on `ctx` throw from native code, mid-forward, so the engine's handling of a
 * failing step is tested on the real native path; or holds the next step for `ms` (a step
 * that does not return, for the callers' deadlines), CPU contexts only.
 */
export const faultTestHooks = {
  failNextSteps(ctx: ContextHandle, count: number): void {
    wrapNativeError(() => backendOf(ctx).failNextSteps(ctx, count));
  },
  stallNextStep(ctx: ContextHandle, ms: number): void {
    wrapNativeError(() => backendOf(ctx).stallNextStep(ctx, ms));
  },
};

// ---------------------------------------------------------------------------------------
// Pooling models (native/src/encoder/): BERT-family encoders, the pooling a model's files
// state, and decoder steps that return hidden states (decoder embedders). The addon's
// exports of this section are declared here, apart from NativeAddon.
// ---------------------------------------------------------------------------------------

/** A loaded encoder (BERT, MiniLM, XLM-RoBERTa, NomicBERT). Freed by `disposeEncoder` or by GC. */
export interface EncoderHandle {
  readonly __brand: 'prism.Encoder';
}
/** Scratch buffers + a thread pool bound to one encoder; no KV cache. */
export interface EncoderContextHandle {
  readonly __brand: 'prism.EncoderContext';
}

/** sentence-transformers' pooling modes, in the order it concatenates them. */
export type PoolingModeName = 'cls' | 'max' | 'mean' | 'mean_sqrt_len_tokens' | 'weightedmean' | 'lasttoken';

/** What a model's files say about pooling (native/src/encoder/pooling_spec.h). */
export interface PoolingSpecInfo {
  /** Modes whose vectors are concatenated; empty: the files state none. */
  readonly modes: readonly PoolingModeName[];
  /** llama.cpp's RANK pooling (a GGUF reranker): one score per input. */
  readonly rank: boolean;
  /** A Normalize module follows (GGUF: llama.cpp's default, true for mean/cls/last). */
  readonly normalize: boolean;
  /** sentence_bert_config.json max_seq_length; 0 = not stated. */
  readonly maxSeqLength: number;
  /** sentence_bert_config.json do_lower_case: inputs are lower-cased before tokenizing. */
  readonly doLowerCase: boolean;
  readonly source: 'sentence-transformers' | 'gguf' | '';
}

export interface EncoderInfo {
  readonly path: string;
  readonly format: 'gguf' | 'safetensors';
  readonly architecture: 'bert' | 'xlm-roberta' | 'nomic-bert';
  readonly name: string;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  /** Longest input (special tokens included) the positions allow. */
  readonly maxTokens: number;
  /** Rows of the token-type table (2 for BERT pairs; 0 or 1: none to tell segments apart). */
  readonly tokenTypes: number;
  readonly activation: 'gelu' | 'gelu_tanh' | 'swiglu';
  /** A sequence classifier's labels (cross-encoders); empty for an embedder. */
  readonly labels: readonly string[];
  readonly pooling: PoolingSpecInfo;
  /** Values per pooled vector: modes × hiddenSize (0 without pooling). */
  readonly pooledDim: number;
  readonly weightBytes: number;
  readonly activations: 'int8' | 'int16';
  readonly tensorTypes: Readonly<Record<string, number>>;
}

export interface EncoderContextOptions {
  /** Upper bound on a pass's tokens (all inputs together). */
  readonly maxBatchTokens: number;
  /** Upper bound on a pass's inputs. */
  readonly maxSeqs: number;
  /** Threads of the context's own pool; default: cores. */
  readonly threads?: number;
}

/**
 * Whole inputs packed end to end: input s is tokens[seqOffsets[s] .. seqOffsets[s+1]), special
 * tokens included. `output` 'pooled': [S × pooledDim] (not normalised); 'tokens': [T × hidden],
 * every token's last hidden state; 'scores': [S × labels], the classifier's raw logits.
 */
export interface EncoderBatch {
  readonly tokens: Int32Array;
  readonly seqOffsets: Int32Array;
  /** Per token: 0 = first segment, 1 = second (a cross-encoder's pair); absent: all 0. */
  readonly tokenTypes?: Int32Array;
  readonly output: 'pooled' | 'tokens' | 'scores';
}

interface PoolingAddon {
  isEncoderModel(path: string): boolean;
  readPoolingSpec(path: string): PoolingSpecInfo;
  loadEncoder(path: string): Promise<EncoderHandle>;
  encoderInfo(encoder: EncoderHandle): EncoderInfo;
  disposeEncoder(encoder: EncoderHandle): void;
  createEncoderContext(encoder: EncoderHandle, options: EncoderContextOptions): EncoderContextHandle;
  disposeEncoderContext(ctx: EncoderContextHandle): void;
  encode(ctx: EncoderContextHandle, batch: EncoderBatch): Promise<Float32Array>;
  hiddenStep(ctx: ContextHandle, plan: StepPlan): Promise<Float32Array>;
}
const pooling = addon as unknown as PoolingAddon;

/** Whether `path` is an encoder (GGUF bert / nomic-bert, or an HF folder of a BERT-family model). Never throws. */
export function isEncoderModel(path: string): boolean {
  return pooling.isEncoderModel(path);
}

/** The pooling a model's files state (sentence-transformers' files, or GGUF `<arch>.pooling_type`). */
export function readPoolingSpec(path: string): PoolingSpecInfo {
  return wrapNativeError(() => pooling.readPoolingSpec(path));
}

export function loadEncoder(path: string): Promise<EncoderHandle> {
  return wrapNativeError(() => pooling.loadEncoder(path));
}

export function encoderInfo(encoder: EncoderHandle): EncoderInfo {
  return pooling.encoderInfo(encoder);
}

export function disposeEncoder(encoder: EncoderHandle): void {
  pooling.disposeEncoder(encoder);
}

export function createEncoderContext(
  encoder: EncoderHandle,
  options: EncoderContextOptions,
): EncoderContextHandle {
  return wrapNativeError(() => pooling.createEncoderContext(encoder, options));
}

export function disposeEncoderContext(ctx: EncoderContextHandle): void {
  pooling.disposeEncoderContext(ctx);
}

/**
 * One forward pass off the JS thread; at most one per context in flight. A batch that breaks
 * a rule (a token id past the vocabulary, an input longer than the model's maxTokens, more
 * than the context's limits) rejects with a RangeError naming the field.
 */
export function encode(ctx: EncoderContextHandle, batch: EncoderBatch): Promise<Float32Array> {
  return wrapNativeError(() => pooling.encode(ctx, batch));
}

/**
 * A decoder step (a CPU context) that returns, per sequence, its last token's hidden state
 * after the final norm ([S × hiddenSize]) instead of sampling: a decoder embedder's
 * last-token pooling. The plan must sample nothing and ask for no logits or drafts.
 */
export async function hiddenStep(ctx: ContextHandle, plan: StepPlan): Promise<Float32Array> {
  const backend = backendOf(ctx);
  if (!backend.capabilities.hiddenStates)
    throw new RangeError(`pooling a decoder is not supported on ${backend.where}`);
  return wrapNativeError(() => pooling.hiddenStep(ctx, plan));
}

// ---------------------------------------------------------------------------------------
// Vision models (native/src/vision/): a vision-language model's image side — SmolVLM /
// Idefics3's image processor (PIL-exact resizing, tiles) and its SigLIP encoder + connector, or
// LLaVA-1.5's CLIPImageProcessor (resize, center crop) and its CLIP encoder + MLP projector,
// LLaVA-1.6's anyres tiles through the same encoder then packed with image_newline, or Gemma 3's Gemma3ImageProcessor (one bilinear resize) and its SigLIP encoder + pooling
// projector, which turn an image into the embedding rows the text model takes at its image tokens.
// ---------------------------------------------------------------------------------------

/**
 * A vision-language family: 'idefics3' (SmolVLM: SigLIP, pixel-shuffle connector, split tiles),
 * 'llava' (LLaVA-1.5: CLIP cut at vision_feature_layer, MLP projector, one center crop),
 * 'llava_next' (LLaVA-1.6: the same encoder on a base tile and the anyres grid's tiles, whose
 * rows `packImageFeatures` lays out unpadded with image_newline; an image's token count depends
 * on its size) or
 * 'gemma3' (Gemma 3: SigLIP, average pooling to mm_tokens_per_image rows, Gemma's RMSNorm and
 * the input projection; one resized image; its image tokens attend to each other both ways).
 */
export type VisionFamily = 'idefics3' | 'llava' | 'llava_next' | 'gemma3';

/** A loaded vision encoder with its own thread pool. Freed by `disposeVisionModel` or by GC. */
export interface VisionModelHandle {
  readonly __brand: 'prism.VisionModel';
}

/** A prompt token of the image expansion: its text and id in the folder's tokenizer.json (-1: absent). */
export interface VisionToken {
  readonly text: string;
  readonly id: number;
}

export interface VisionInfo {
  readonly path: string;
  readonly name: string;
  /** config.json model_type. */
  readonly architecture: 'idefics3' | 'smolvlm' | 'llava' | 'llava_next' | 'gemma3';
  /** Which encoder, preprocessing and prompt expansion the model takes (native VisionFamily). */
  readonly family: VisionFamily;
  /** A tile's edge in pixels (vision_config.image_size): tiles are tileSize x tileSize. */
  readonly tileSize: number;
  readonly patchSize: number;
  /** Embedding rows (and <image> tokens) per tile: (tileSize / patchSize)² / scaleFactor². */
  readonly tokensPerTile: number;
  readonly scaleFactor: number;
  readonly visionHiddenSize: number;
  readonly visionLayers: number;
  /** Width of an embedding row: the text model's hidden size. */
  readonly textHiddenSize: number;
  /** Tiles one image can give at most (its split grid + the global image). */
  readonly maxTiles: number;
  readonly threads: number;
  readonly weightBytes: number;
  /** The image processor's parameters (preprocessor_config.json, processor_config.json; an mmproj's clip.vision.* keys). */
  readonly processor: {
    /** size.longest_edge: the image's longest edge after the first resize. */
    readonly longestEdge: number;
    /** max_image_size.longest_edge (= tileSize). */
    readonly tileEdge: number;
    readonly doImageSplitting: boolean;
    readonly resample: 'lanczos' | 'bilinear' | 'bicubic';
    readonly rescaleFactor: number;
    readonly imageMean: readonly number[];
    readonly imageStd: readonly number[];
    /** <image> tokens per tile in the prompt (processor_config.json image_seq_len). */
    readonly imageSeqLen: number;
    /** LLaVA-1.6's image_grid_pinpoints, [height, width] pairs (empty for the other families). */
    readonly gridPinpoints: readonly (readonly [number, number])[];
    /** preprocessImage's bounds on its input. */
    readonly maxImageSide: number;
    readonly maxImagePixels: number;
  };
  /**
   * Idefics3Processor's expansion of one <image> as text: per row of split tiles, per tile
   * `fakeAroundImage rowCol[r*6+c] image×imageSeqLen`, then "\n"; then "\n" `fakeAroundImage
   * globalImage image×imageSeqLen fakeAroundImage` for the global image. A single-tile image
   * (rows = cols = 0): `fakeAroundImage globalImage image×imageSeqLen fakeAroundImage`.
   * LLaVA uses `image` alone (LlavaProcessor: image×imageSeqLen); its other ids are -1.
   * Gemma 3 (Gemma3Processor): "\n\n" `startOfImage` `image`×imageSeqLen `endOfImage` "\n\n",
   * `image` being <image_soft_token>; the Idefics3 ids are -1.
   */
  readonly tokens: {
    readonly image: VisionToken;
    readonly fakeAroundImage: VisionToken;
    readonly globalImage: VisionToken;
    /** 36 entries: <row_{r+1}_col_{c+1}> at r * 6 + c. */
    readonly rowCol: readonly VisionToken[];
    /** Gemma 3's <start_of_image> and <end_of_image> (-1 for the other families). */
    readonly startOfImage: VisionToken;
    readonly endOfImage: VisionToken;
  };
}

/**
 * An image as the model's processor makes it: tiles in order (split tiles row-major, then the
 * global image; LLaVA-1.6: the base tile first, then its grid row-major).
 */
export interface PreprocessedImage {
  /** [tileCount × 3 × tileSize × tileSize], rescaled and normalised, channel-first. */
  readonly tiles: Float32Array;
  readonly tileCount: number;
  /** The split grid; 0 x 0 when the image is a single tile. */
  readonly rows: number;
  readonly cols: number;
}

interface VisionAddon {
  isVisionModel(path: string): boolean;
  loadVisionModel(path: string, options?: VisionLoadOptions): Promise<VisionModelHandle>;
  visionInfo(vision: VisionModelHandle): VisionInfo;
  disposeVisionModel(vision: VisionModelHandle): void;
  preprocessImage(
    vision: VisionModelHandle,
    rgb: Uint8Array,
    width: number,
    height: number,
  ): Promise<PreprocessedImage>;
  encodeImage(vision: VisionModelHandle, tiles: Float32Array, n: number): Promise<Float32Array>;
  packImageFeatures(
    vision: VisionModelHandle,
    rows: Float32Array,
    width: number,
    height: number,
  ): Promise<Float32Array>;
}
const vision = addon as unknown as VisionAddon;

/**
 * Whether `path` is a folder whose config.json names an Idefics3 / SmolVLM or LLaVA model, or an
 * mmproj GGUF of projector type idefics3 or mlp (llama.cpp's files for SmolVLM, LLaVA-1.5).
 * Never throws.
 */
export function isVisionModel(path: string): boolean {
  return vision.isVisionModel(path);
}

export interface VisionLoadOptions {
  /** The encoder pool's threads (default: cores). */
  readonly threads?: number;
  /**
   * An mmproj GGUF only (a folder refuses it): the text GGUF whose vocabulary gives the image
   * tokens' ids; without it they are -1 (the mmproj file holds none).
   */
  readonly textModel?: string;
}

/**
 * Loads the image side of a folder (config, processor config, tokenizer.json's image tokens,
 * the vision tower's and connector's / projector's tensors) or of an mmproj GGUF (clip.vision.*
 * keys, v.* and mm.* tensors: the same encoder); rejects with a ModelFormatError naming the
 * file and rule (these three functions reject, never throw).
 */
export async function loadVisionModel(path: string, options?: VisionLoadOptions): Promise<VisionModelHandle> {
  return wrapNativeError(() => vision.loadVisionModel(path, options));
}

export function visionInfo(handle: VisionModelHandle): VisionInfo {
  return wrapNativeError(() => vision.visionInfo(handle));
}

export function disposeVisionModel(handle: VisionModelHandle): void {
  vision.disposeVisionModel(handle);
}

/**
 * The family's image processor (Idefics3ImageProcessor, CLIPImageProcessor) on one image off
 * the JS thread: `rgb` is [height × width × 3] bytes.
 * Equal to transformers' PIL-backend pixel_values to float rounding. A size past
 * processor.maxImageSide / maxImagePixels or a byte count other than width × height × 3
 * rejects with a RangeError naming it.
 */
export async function preprocessImage(
  handle: VisionModelHandle,
  rgb: Uint8Array,
  width: number,
  height: number,
): Promise<PreprocessedImage> {
  return wrapNativeError(() => vision.preprocessImage(handle, rgb, width, height));
}

/**
 * The vision encoder + connector over `n` tiles (any images' tiles, batched; at most 256 a
 * pass) off the JS thread: [n × tokensPerTile × textHiddenSize] rows, tile by tile, in the
 * order the prompt's <image> tokens take them. Passes on one handle run one at a time.
 */
export async function encodeImage(
  handle: VisionModelHandle,
  tiles: Float32Array,
  n: number,
): Promise<Float32Array> {
  return wrapNativeError(() => vision.encodeImage(handle, tiles, n));
}

/**
 * LLaVA-1.6 only: one image's rows as the text model takes them (pack_image_features), from
 * encodeImage's rows of its preprocessed tiles (`rows`: [tileCount × tokensPerTile ×
 * textHiddenSize]) and the image's original size: the base tile's rows, then the grid's patch
 * rows unpadded, image_newline after each row. Off the JS thread; a row count unlike the
 * size's tiles rejects with a RangeError, another family with a TypeError.
 */
export async function packImageFeatures(
  handle: VisionModelHandle,
  rows: Float32Array,
  width: number,
  height: number,
): Promise<Float32Array> {
  return wrapNativeError(() => vision.packImageFeatures(handle, rows, width, height));
}

// ---------------------------------------------------------------------------------------
// The grammar addon (prism_xgrammar.node: xgrammar's C++ core, native/grammar/)
// ---------------------------------------------------------------------------------------

/** xgrammar's tokenizer description of a model's vocabulary. */
export interface GrammarTokenizerHandle {
  readonly __brand: 'prism.GrammarTokenizer';
}
/** A grammar compiler bound to one tokenizer description. */
export interface GrammarCompilerHandle {
  readonly __brand: 'prism.GrammarCompiler';
}
/** A compiled grammar (its token masks precomputed for the tokenizer). */
export interface CompiledGrammarHandle {
  readonly __brand: 'prism.CompiledGrammar';
}
/** One sequence's position in a compiled grammar. */
export interface GrammarMatcherHandle {
  readonly __brand: 'prism.GrammarMatcher';
}

/**
 * xgrammar 0.2.8 (its pinned source release, built by `npm install`). Every failure —
 * a schema, regex, EBNF text or structural tag the library rejects, a bad handle — throws a
 * JS Error carrying xgrammar's reason; none ends the process. Handles are freed by `dispose`
 * (or GC); a disposed handle throws when used.
 */
export interface GrammarAddon {
  /** How `vocab` spells tokens: 'byte_level' (GPT-2 BPE), 'byte_fallback' (SentencePiece `<0x0A>`), 'raw'. */
  createTokenizerInfo(
    vocab: readonly string[],
    vocabType: 'byte_level' | 'byte_fallback' | 'raw',
    prependSpace: boolean,
    /** Rows of the model's logits (may exceed `vocab.length`). */
    vocabSize: number,
    stopTokenIds: readonly number[],
  ): GrammarTokenizerHandle;
  /** xgrammar's own compile cache is off; `maxThreads` compiles one grammar's masks in parallel. */
  createCompiler(info: GrammarTokenizerHandle, maxThreads: number): GrammarCompilerHandle;
  /**
   * Documents on one line with `, ` and `: ` (no free whitespace). `strict`: properties not
   * in the schema are refused unless `additionalProperties` allows them.
   */
  compileJsonSchema(compiler: GrammarCompilerHandle, schema: string, strict: boolean): CompiledGrammarHandle;
  /** xgrammar's EBNF (GBNF-like), rule `root` first. */
  compileEbnf(compiler: GrammarCompilerHandle, ebnf: string): CompiledGrammarHandle;
  /** A structural tag `{"type":"structural_tag","format":…}` as JSON text. */
  compileStructuralTag(compiler: GrammarCompilerHandle, tag: string): CompiledGrammarHandle;
  /**
   * `terminateWithoutStopToken`: the matcher ends where the grammar ends (for testing
   * strings); otherwise it ends only on a stop token, which it allows where the grammar can end.
   */
  createMatcher(grammar: CompiledGrammarHandle, terminateWithoutStopToken: boolean): GrammarMatcherHandle;
  /** False (state unchanged) when the grammar does not allow the token here. */
  acceptToken(matcher: GrammarMatcherHandle, token: number): boolean;
  /** Advances by text, character-wise (tests); false (state unchanged) when not allowed. */
  acceptString(matcher: GrammarMatcherHandle, text: string): boolean;
  /** Fills `mask` (length `bitmaskSize(vocabSize)`) with the allowed next tokens, bit t = token t. */
  fillNextTokenBitmask(matcher: GrammarMatcherHandle, mask: Int32Array): boolean;
  isTerminated(matcher: GrammarMatcherHandle): boolean;
  /** The text the grammar forces next ('' when it allows a choice). */
  findJumpForwardString(matcher: GrammarMatcherHandle): string;
  /** Undoes the last `numTokens` accepted tokens (at most as many as were accepted). */
  rollback(matcher: GrammarMatcherHandle, numTokens: number): void;
  dispose(
    handle: GrammarTokenizerHandle | GrammarCompilerHandle | CompiledGrammarHandle | GrammarMatcherHandle,
  ): void;
  /** Int32 words of a token mask over `vocabSize` tokens. */
  bitmaskSize(vocabSize: number): number;
}

let grammarAddon: GrammarAddon | null = null;

/**
 * Loads the grammar addon on first use. Only the grammar worker thread (and tests) need it, so
 * it is not loaded with the compute addon.
 */
export function loadGrammarAddon(): GrammarAddon {
  grammarAddon ??= createRequire(import.meta.url)(findAddon('prism_xgrammar.node')) as GrammarAddon;
  return grammarAddon;
}
