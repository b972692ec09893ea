/**
 * The engine's public entry: the one module of engine/ that gateways/ and cli/ import for the
 * engine's records, errors and the few rules a caller applies before it has an engine
 * request (the import rules in .dependency-cruiser.cjs hold them to it). Everything here is
 * re-exported from where it lives; nothing is defined here.
 *
 * cli/ also imports the engine's process entry points directly (loading, options, the gRPC
 * server and client, the P/D coordinator): it is where processes are put together.
 */
export type {
  AdapterList,
  ChatDelta,
  ChatMessage,
  ChatRenderExtras,
  ChatTool,
  ChatToolCall,
  Constraint,
  ContentPart,
  DecodeResult,
  Engine,
  EngineInfo,
  EngineStatus,
  FinishEvent,
  FinishReason,
  GenerateEvent,
  GenerateRequest,
  HistogramSnapshot,
  ImageInput,
  PoolingInput,
  PoolingRequest,
  PoolingResult,
  PoolingTask,
  PromptInput,
  SamplingParams,
  TokenEvent,
  PromptTokenLogprob,
  TokenLogprob,
  ToolCallDelta,
  ToolChoice,
  Usage,
} from './types.js';
export { ENGINE_ROLES } from './pd-types.js';
export type { EngineRole, KvTransferParams, KvTransferSpec, RoleState } from './pd-types.js';
export { EngineError, type EngineErrorCode } from './errors.js';
/** The spec's rules for adapter names and paths (management routes, model names in requests). */
export { checkAdapterName, checkAdapterPathText } from './adapters/rules.js';
/** MindIE's d-target header as a gRPC target (split prefill/decode). */
export { decodeTargetAddress } from './kv-transfer/peers.js';
export { traceExportConfigured } from './trace-export.js';
/**
 * Faults across engines, for the engine fronts (the replica pool, the P/D coordinator): a
 * request whose engine fails before its client saw output is retried elsewhere with its seed.
 */
export { DEFAULT_HEALTH, HealthMonitor, withTimeout, type HealthOptions } from './failover/health.js';
export { HeldAttempts } from './failover/held-attempts.js';
export { Attempt, generateWithRetries, withFixedSeed, type AttemptRoute } from './failover/retry.js';
export { withDelivery } from './failover/delivery.js';
/** The most inputs one pooling request may carry (TEI's /info reports it). */
export { MAX_POOLING_INPUTS } from './pooling/validate.js';
