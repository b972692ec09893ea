/**
 * The engine core's one configuration record (nano-vllm's `Config`). Field names and defaults
 * follow MindIE's config.json (ScheduleConfig / ModelDeployConfig, see
 * shared/reference/mindie-compat.md §2); config/ maps a loaded config.json onto it, the CLI
 * builds it from flags. `resolveEngineOptions` fills defaults and checks every bound once.
 */
import { ENGINE_ROLES, type EngineRole } from './pd-types.js';
import { hostname } from 'node:os';
import { EngineError } from './errors.js';
import { sequencePages } from './kv-layout.js';
import type { KvLayout } from '../native/native.js';
import type { PoolingOptions } from './pooling/options.js';
import {
  resolveSpeculative,
  type ResolvedSpeculativeOptions,
  type SpeculativeOptions,
} from './speculative/options.js';

export const SCHEDULING_POLICIES = ['fcfs', 'priority'] as const;
export type SchedulingPolicy = (typeof SCHEDULING_POLICIES)[number];

/** How an over-long prompt is handled (MindIE `truncation`): 0 error, -1 cut the right end, 1 cut the left end. */
export type TruncationMode = 0 | -1 | 1;

export interface EngineOptions {
  /** Most sequences running at once (ScheduleConfig.maxBatchSize). */
  readonly maxBatchSize?: number;
  /** Token budget of one step, shared by decode tokens and prefill chunks. */
  readonly maxPrefillTokens?: number;
  /** Most sequences doing prefill in one step; 0 or absent = maxBatchSize. */
  readonly maxPrefillBatchSize?: number;
  /** Tokens per KV block. */
  readonly cacheBlockSize?: number;
  /** KV blocks in the pool; when absent derived from `kvCacheBytes`. */
  readonly kvBlocks?: number;
  /** Memory budget for the KV cache when `kvBlocks` is absent (default 1 GiB). */
  readonly kvCacheBytes?: number;
  /**
   * Prompt + generated tokens of one sequence. Absent, when the model is known
   * (`resolveEngineOptions(options, contextLength)`): the model's own context length, capped
   * by `maxModelLen` — and then maxInputTokenLen and maxIterTimes default to what fits in it,
   * and a request whose prompt + max_new_tokens cannot fit is refused (vLLM's rule) instead of
   * cut (MindIE's, when a config file sets these fields).
   */
  readonly maxSeqLen?: number;
  /** Cap on the model's context length when maxSeqLen is absent (vLLM's --max-model-len). */
  readonly maxModelLen?: number;
  /** Longest prompt; the effective limit is min(maxInputTokenLen, maxSeqLen - 1). */
  readonly maxInputTokenLen?: number;
  readonly truncation?: TruncationMode;
  /** Caps max_new_tokens (ScheduleConfig.maxIterTimes). */
  readonly maxIterTimes?: number;
  /** Bounded waiting queue; past it requests fail RESOURCE_EXHAUSTED. */
  readonly maxQueueSize?: number;
  /**
   * Which waiting request goes first (vLLM's --scheduling-policy): 'fcfs' (default) by
   * arrival; 'priority' by the request's priority (lower first), ties by arrival, preempting
   * lower-priority running requests for a higher-priority one that cannot be scheduled.
   */
  readonly schedulingPolicy?: SchedulingPolicy;
  /** Largest n / best_of (ScheduleConfig.maxN). */
  readonly maxN?: number;
  readonly prefixCache?: boolean;
  /** A `.jinja` file that replaces the model's own chat template. */
  readonly chatTemplatePath?: string;
  /**
   * llama.cpp's image side of a GGUF text model (`--mmproj`): the mmproj GGUF that
   * `convert_hf_to_gguf.py --mmproj` writes beside it. A Hugging Face folder carries its own.
   */
  readonly mmproj?: string;
  /** `tool_call_parser` names by model type (config `models.<model_type>.tool_call_options`). */
  readonly toolCallParsers?: Readonly<Record<string, string>>;
  /** Threads of the native context (default: the machine's cores). */
  readonly threads?: number;
  /** 'cpu' (default), 'cuda' or 'cuda:N' (engine/device.ts checks it). */
  readonly device?: string;
  /** The CUDA decode kernels, 'legacy' (default) or 'fast'; only with a CUDA device. */
  readonly cudaKernels?: string;
  /** Served model name (default: the model's own name). */
  readonly modelName?: string;
  /** LoRA adapters (engine/adapters/): static ones and the dynamic-loading limits. */
  readonly lora?: LoraOptions;
  /** Publish KV-cache events (engine/kv-events.ts); absent = off. */
  readonly kvEvents?: KvEventsOptions;
  /** Speculative decoding (engine/speculative/); absent = off. */
  readonly speculative?: SpeculativeOptions;
  /** Split prefill/decode (engine/kv-transfer/): the role, default mixed. */
  readonly role?: EngineRole;
  /** How long leased KV blocks wait for their pull before they are freed (ms, default 30000). */
  readonly kvLeaseMs?: number;
  /** Deadline of one KV pull or hand-off (ms, default 10000, MindIE's kv_trans_timeout). */
  readonly kvTransferTimeoutMs?: number;
  /** Pooling models (engine/pooling/): which task a model is served for, Matryoshka widths. */
  readonly pooling?: PoolingOptions;
}

export interface KvEventsOptions {
  /** ZeroMQ endpoint: tcp://*:PORT binds (subscribers connect here), tcp://HOST:PORT connects. */
  readonly endpoint: string;
  /** Topic of every message; default defaultKvEventsTopic(served model name). */
  readonly topic?: string;
}

/**
 * llm-d's topic, `kv@<pod>@<model>`: the indexer takes the pod and the model from it. The pod
 * defaults to POD_IP (set from the downward API in deploy/) or the host name; `prism serve`
 * adds its service port, since llm-d's scorer names pods `address:port`.
 */
export function defaultKvEventsTopic(modelName: string, podId = process.env.POD_IP || hostname()): string {
  return `kv@${podId}@${modelName}`;
}

export interface LoraOptions {
  /** Native slots (distinct adapters in one step); with maxLoraRank > 0 it turns dynamic loading on. */
  readonly maxLoras: number;
  /** Adapters loaded at once (vLLM max_cpu_loras); absent/0 = maxLoras. Above it, slots swap. */
  readonly maxCpuLoras?: number;
  readonly maxLoraRank: number;
  /** Loaded at start (ModelDeployConfig.LoraModules). */
  readonly modules: readonly { readonly name: string; readonly path: string }[];
}

export interface ResolvedEngineOptions {
  readonly maxBatchSize: number;
  readonly maxPrefillTokens: number;
  readonly maxPrefillBatchSize: number;
  readonly cacheBlockSize: number;
  readonly kvBlocks: number | undefined;
  readonly kvCacheBytes: number;
  readonly maxSeqLen: number;
  /** Already min(maxInputTokenLen, maxSeqLen - 1). */
  readonly maxInputTokenLen: number;
  /**
   * The limits came from the model's context (no maxSeqLen given): a request whose prompt plus
   * an explicit max_new_tokens cannot fit is refused, not cut (engine/context-fit.ts).
   */
  readonly contextFromModel: boolean;
  readonly truncation: TruncationMode;
  readonly maxIterTimes: number;
  readonly maxQueueSize: number;
  readonly schedulingPolicy: SchedulingPolicy;
  readonly maxN: number;
  readonly prefixCache: boolean;
  readonly chatTemplatePath: string | undefined;
  readonly mmproj: string | undefined;
  readonly toolCallParsers: Readonly<Record<string, string>>;
  readonly threads: number | undefined;
  readonly device: string | undefined;
  readonly cudaKernels: string | undefined;
  readonly modelName: string | undefined;
  readonly lora: LoraOptions | undefined;
  readonly kvEvents: KvEventsOptions | undefined;
  readonly speculative: ResolvedSpeculativeOptions | undefined;
  readonly role: EngineRole;
  readonly kvLeaseMs: number;
  readonly kvTransferTimeoutMs: number;
}

const ENGINE_DEFAULTS = {
  maxBatchSize: 200,
  maxPrefillTokens: 8192,
  cacheBlockSize: 128,
  kvCacheBytes: 1 << 30,
  maxSeqLen: 2560,
  maxInputTokenLen: 2048,
  truncation: 0 as TruncationMode,
  maxIterTimes: 512,
  maxN: 128,
  prefixCache: true,
} as const;

/** MindIE's three context limits at their defaults (what a config file without them gets). */
export const MINDIE_CONTEXT_LIMITS = {
  maxSeqLen: ENGINE_DEFAULTS.maxSeqLen,
  maxInputTokenLen: ENGINE_DEFAULTS.maxInputTokenLen,
  maxIterTimes: ENGINE_DEFAULTS.maxIterTimes,
} as const;

function bad(field: string, rule: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', `engine option ${field}: ${rule}`, field);
}

function int(
  options: EngineOptions,
  field: keyof EngineOptions,
  fallback: number,
  min: number,
  max: number,
): number {
  const v = options[field];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(field, `must be an integer, got ${String(v)}`);
  if (v < min || v > max) throw bad(field, `must be in [${min}, ${max}], got ${v}`);
  return v;
}

/**
 * Fills defaults and checks every bound. `modelContext` (the loaded model's context length)
 * makes an absent maxSeqLen the model's own, capped by maxModelLen; without it (an engine core
 * built by hand) an absent maxSeqLen is MindIE's default.
 */
export function resolveEngineOptions(
  options: EngineOptions = {},
  modelContext?: number,
): ResolvedEngineOptions {
  const d = ENGINE_DEFAULTS;
  const maxBatchSize = int(options, 'maxBatchSize', d.maxBatchSize, 1, 819200);
  const maxPrefillTokens = int(options, 'maxPrefillTokens', d.maxPrefillTokens, 1, 4194304);
  const prefillBatch = int(options, 'maxPrefillBatchSize', 0, 0, maxBatchSize);
  const cacheBlockSize = int(options, 'cacheBlockSize', d.cacheBlockSize, 1, 128);
  const kvBlocks = options.kvBlocks === undefined ? undefined : int(options, 'kvBlocks', 0, 1, 1 << 24);
  const kvCacheBytes = int(options, 'kvCacheBytes', d.kvCacheBytes, 1 << 20, Number.MAX_SAFE_INTEGER);
  const maxModelLen =
    options.maxModelLen === undefined ? undefined : int(options, 'maxModelLen', 0, 2, 4194304);
  if (maxModelLen !== undefined && options.maxSeqLen !== undefined)
    throw bad('maxModelLen', 'caps the model context when maxSeqLen is not set: set one of them');
  const contextFromModel = options.maxSeqLen === undefined && modelContext !== undefined;
  const fromModel = contextFromModel
    ? Math.max(2, Math.min(modelContext, maxModelLen ?? modelContext))
    : undefined;
  const maxSeqLen = int(options, 'maxSeqLen', fromModel ?? d.maxSeqLen, 2, 4194304);
  // From the model's context: prompts up to maxSeqLen - 1, outputs up to what fits.
  const maxInputTokenLen = int(
    options,
    'maxInputTokenLen',
    contextFromModel ? maxSeqLen - 1 : d.maxInputTokenLen,
    1,
    4194304,
  );
  const maxIterTimes = int(
    options,
    'maxIterTimes',
    contextFromModel ? maxSeqLen : Math.min(d.maxIterTimes, maxSeqLen),
    1,
    maxSeqLen,
  );
  const maxQueueSize = int(options, 'maxQueueSize', Math.max(2 * maxBatchSize, 64), 1, 1 << 24);
  const maxN = int(options, 'maxN', Math.min(d.maxN, maxBatchSize), 1, maxBatchSize);
  const truncation = options.truncation ?? d.truncation;
  if (truncation !== 0 && truncation !== -1 && truncation !== 1) {
    throw bad(
      'truncation',
      `must be 0 (error), -1 (cut the right end) or 1 (cut the left end), got ${String(truncation)}`,
    );
  }
  if (options.prefixCache !== undefined && typeof options.prefixCache !== 'boolean') {
    throw bad('prefixCache', 'must be a boolean');
  }
  const schedulingPolicy = options.schedulingPolicy ?? 'fcfs';
  if (!SCHEDULING_POLICIES.includes(schedulingPolicy))
    throw bad(
      'schedulingPolicy',
      `must be one of ${SCHEDULING_POLICIES.join(', ')}, got ${String(schedulingPolicy)}`,
    );
  const threads = options.threads === undefined ? undefined : int(options, 'threads', 1, 1, 1024);
  const effectiveInput = Math.min(maxInputTokenLen, maxSeqLen - 1);
  // Whether kvBlocks holds one sequence of maxSeqLen depends on the model's layers (a sliding
  // window needs fewer): checkKvBlocks, once the model is loaded.
  return {
    maxBatchSize,
    maxPrefillTokens,
    maxPrefillBatchSize: prefillBatch === 0 ? maxBatchSize : prefillBatch,
    cacheBlockSize,
    kvBlocks,
    kvCacheBytes,
    maxSeqLen,
    maxInputTokenLen: effectiveInput,
    contextFromModel,
    truncation,
    maxIterTimes,
    maxQueueSize,
    schedulingPolicy,
    maxN,
    prefixCache: options.prefixCache ?? d.prefixCache,
    chatTemplatePath: options.chatTemplatePath,
    mmproj: options.mmproj,
    toolCallParsers: options.toolCallParsers ?? {},
    threads,
    device: options.device,
    cudaKernels: options.cudaKernels,
    modelName: options.modelName,
    lora: options.lora,
    kvEvents: checkKvEvents(options.kvEvents),
    speculative: resolveSpeculative(options.speculative),
    role: checkRole(options.role),
    kvLeaseMs: int(options, 'kvLeaseMs', 30_000, 100, 3_600_000),
    kvTransferTimeoutMs: int(options, 'kvTransferTimeoutMs', 10_000, 100, 3_600_000),
  };
}

function checkRole(role: EngineRole | undefined): EngineRole {
  if (role === undefined) return 'mixed';
  if (!ENGINE_ROLES.includes(role))
    throw bad('role', `must be one of ${ENGINE_ROLES.join(', ')}, got '${String(role)}'`);
  return role;
}

/** ZeroMQ addresses the publisher can open: tcp with a port (or `*`), ipc, inproc. */
const KV_EVENTS_ENDPOINT = /^(tcp:\/\/[^\s/]+:(\d{1,5}|\*)|ipc:\/\/\S+|inproc:\/\/\S+)$/;

function checkKvEvents(kv: KvEventsOptions | undefined): KvEventsOptions | undefined {
  if (kv === undefined) return undefined;
  if (typeof kv.endpoint !== 'string' || !KV_EVENTS_ENDPOINT.test(kv.endpoint)) {
    throw bad(
      'kvEvents.endpoint',
      `must be tcp://HOST:PORT (tcp://*:PORT binds), ipc://PATH or inproc://NAME, got '${String(kv.endpoint)}'`,
    );
  }
  if (
    kv.topic !== undefined &&
    (typeof kv.topic !== 'string' || kv.topic.length === 0 || kv.topic.length > 1024)
  ) {
    throw bad('kvEvents.topic', 'must be a non-empty string of at most 1024 characters');
  }
  return kv;
}

/** Bytes of one KV block: K and V, every layer, F16 storage (2 bytes per element). */
export function kvBytesPerBlock(
  o: ResolvedEngineOptions,
  model: { numLayers: number; numKvHeads: number; headDim: number },
): number {
  return 2 * model.numLayers * model.numKvHeads * model.headDim * 2 * o.cacheBlockSize;
}

/**
 * An explicit `kvBlocks` (that many blocks of every layer: `kvBlocks × pagesPerBlock` pages) must
 * hold one sequence of maxSeqLen. Layers that attend to the whole context keep every block of
 * it; sliding-window layers keep only the window's (engine/kv-layout.ts sequencePages), so a
 * Mistral or Gemma 3 pool may hold fewer blocks than maxSeqLen needs for full attention.
 */
export function checkKvBlocks(o: ResolvedEngineOptions, layout: KvLayout): void {
  if (o.kvBlocks === undefined) return;
  const need = sequencePages(layout, o);
  if (o.kvBlocks * layout.pagesPerBlock >= need) return;
  const blocks = Math.ceil(need / layout.pagesPerBlock);
  const windowed = layout.groups.some((g) => g.window > 0);
  throw bad(
    'kvBlocks',
    `${o.kvBlocks} blocks of ${o.cacheBlockSize} tokens cannot hold one sequence of maxSeqLen ${o.maxSeqLen}: ` +
      `it needs ${blocks}${windowed ? ` (its sliding-window layers keep only the window's blocks)` : ''}`,
  );
}

/** The smallest pool that can run: one sequence of maxSeqLen, plus one block of headroom. */
export function minKvBlocks(o: ResolvedEngineOptions): number {
  return Math.ceil(o.maxSeqLen / o.cacheBlockSize) + 1;
}

/**
 * KV blocks that fit the byte budget (config `npuMemSize`, here `kvCacheBytes`). A budget
 * below the minimum pool is an error naming the field and the size needed, not a pool
 * silently grown past what the operator allowed.
 */
export function kvBlocksForBudget(
  o: ResolvedEngineOptions,
  model: { numLayers: number; numKvHeads: number; headDim: number },
  /** The smallest pool that runs (engine/kv-layout.ts minKvPages for a model with layer groups). */
  min = minKvBlocks(o),
): number {
  const bytesPerBlock = kvBytesPerBlock(o, model);
  const fit = Math.floor(o.kvCacheBytes / bytesPerBlock);
  if (fit < min) {
    throw bad(
      'kvCacheBytes',
      `a KV budget (config npuMemSize) of ${mib(o.kvCacheBytes)} holds ${fit} blocks of ${o.cacheBlockSize} tokens; ` +
        `one sequence of maxSeqLen ${o.maxSeqLen}${o.contextFromModel ? " (the model's context; --max-model-len caps it)" : ''} ` +
        `needs ${min} (${mib(min * bytesPerBlock)}), ${mib((min - fit) * bytesPerBlock)} more`,
    );
  }
  return fit;
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
