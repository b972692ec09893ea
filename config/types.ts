/**
 * The resolved config.json: what the loader returns after validation with every default
 * filled in (schema.ts). Field names are MindIE's, so a reader can match them to its docs.
 */

interface HealthCheckConfig {
  readonly npuUsageThreshold: number;
}

interface ServerConfig {
  readonly ipAddress: string;
  readonly managementIpAddress: string;
  readonly port: number;
  readonly managementPort: number;
  readonly metricsPort: number;
  readonly allowAllZeroIpListening: boolean;
  readonly maxLinkNum: number;
  readonly fullTextEnabled: boolean;
  readonly inferMode: 'standard' | 'dmi';
  readonly openAiSupport: string;
  /** Seconds. */
  readonly tokenTimeout: number;
  /** Seconds. */
  readonly e2eTimeout: number;
  /** Megabytes. */
  readonly maxRequestLength: number;
  readonly distDPServerEnabled: boolean;
  readonly HealthCheckConfig: HealthCheckConfig;
  readonly httpsEnabled: boolean;
  readonly tlsCaPath: string;
  readonly tlsCaFile: readonly string[];
  readonly tlsCert: string;
  readonly tlsPk: string;
  readonly tlsPkPwd: string;
  readonly tlsCrlPath: string;
  readonly tlsCrlFiles: readonly string[];
  readonly kmcKsfMaster: string;
  readonly kmcKsfStandby: string;
  readonly managementTlsCaFile: readonly string[];
  readonly managementTlsCert: string;
  readonly managementTlsPk: string;
  readonly managementTlsPkPwd: string;
  readonly managementTlsCrlPath: string;
  readonly managementTlsCrlFiles: readonly string[];
  readonly metricsTlsCaFile: readonly string[];
  readonly metricsTlsCert: string;
  readonly metricsTlsPk: string;
  readonly metricsTlsPkPwd: string;
  readonly metricsTlsCrlPath: string;
  readonly metricsTlsCrlFiles: readonly string[];
  readonly interCommTLSEnabled: boolean;
  readonly interCommPort: number;
  readonly interCommTlsCaPath?: string;
  readonly interCommTlsCaFiles?: readonly string[];
  readonly interCommTlsCert?: string;
  readonly interCommTlsPk?: string;
  readonly interCommTlsPkPwd?: string;
  readonly interCommTlsCrlPath?: string;
  readonly interCommTlsCrlFiles?: readonly string[];
  /** Prism: API keys of the service listener. */
  readonly apiKeys?: readonly string[];
  /** Prism: a file of service API keys, one per line. */
  readonly apiKeyFile?: string;
  /** Prism: API keys of the management and metrics listeners. */
  readonly managementApiKeys?: readonly string[];
  readonly managementApiKeyFile?: string;
  /** Prism: health and metrics routes answer without a key. */
  readonly openHealthAndMetrics: boolean;
  readonly allowOpenManagement: boolean;
  /** Prism: limits that protect the process. */
  readonly limits: ServerLimits;
}

/** config.json ServerConfig.limits, resolved; what each guards (gateways/shared/limits.ts). */
export interface ServerLimits {
  /** Deepest nesting of arrays/objects in a JSON body. */
  readonly maxJsonDepth: number;
  /** Longest array anywhere in a JSON body. */
  readonly maxArrayLength: number;
  /** Longest `messages` list (chat). */
  readonly maxMessages: number;
  /** Longest `tools` / `functions` list (chat). */
  readonly maxTools: number;
  /** Bytes of the request line and headers together (Node answers 431 beyond). */
  readonly maxHeaderBytes: number;
  /** Number of request headers (431 beyond). */
  readonly maxHeaderCount: number;
  /** A client must send all its headers within this (slowloris), ms. */
  readonly headersTimeoutMs: number;
  /** A client must send its whole request (headers and body) within this, ms. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this, ms. */
  readonly keepAliveTimeoutMs: number;
}

interface ModelTypeOptions {
  /** Path of a `.jinja` file replacing the model's chat template; '' = the model's own. */
  readonly chat_template: string;
  readonly tool_call_options?: { readonly tool_call_parser: string };
  readonly kv_cache_options?: { readonly enable_nz?: boolean };
}

interface ModelConfig {
  readonly modelInstanceType: 'Standard' | 'StandardMock';
  readonly modelName: string;
  readonly modelWeightPath?: string;
  readonly worldSize: number;
  /** GB of CPU swap space; 0 turns swap off. */
  readonly cpuMemSize: number;
  /** GB of KV-cache memory; -1 = automatic. */
  readonly npuMemSize: number;
  /** 'cuda' runs the model on the CUDA device npuDeviceIds[0][0]; the others on the CPU. */
  readonly backendType: 'atb' | 'torch' | 'cpu' | 'cuda';
  readonly trustRemoteCode: boolean;
  readonly kv_trans_timeout: number;
  readonly kv_link_timeout: number;
  readonly async_scheduler_wait_time?: number;
  /** The raw JSON string as written; parsed form in `plugins`. */
  readonly plugin_params?: string;
  readonly models?: Readonly<Record<string, ModelTypeOptions>>;
}

interface LoraModule {
  readonly name: string;
  readonly path: string;
  readonly baseModelName: string;
}

export interface ModelDeployConfig {
  readonly maxSeqLen: number;
  readonly maxInputTokenLen: number;
  /** Normalised: 0 error, -1 cut the right end (MindIE `true`), 1 cut the left end. */
  readonly truncation: 0 | -1 | 1;
  readonly ModelConfig: readonly ModelConfig[];
  readonly LoraModules: readonly LoraModule[];
  readonly maxLoras: number;
  /** Adapters loaded at once (vLLM max_cpu_loras); 0 = maxLoras. Not in MindIE's spec. */
  readonly maxCpuLoras: number;
  readonly maxLoraRank: number;
}

interface ScheduleConfig {
  readonly templateType: 'Standard' | 'Mix';
  readonly templateName: string;
  readonly cacheBlockSize: number;
  /** 0 = maxBatchSize. */
  readonly maxPrefillBatchSize: number;
  readonly maxPrefillTokens: number;
  readonly prefillTimeMsPerReq: number;
  readonly decodeTimeMsPerReq: number;
  readonly prefillPolicyType: 0;
  readonly decodePolicyType: 0;
  readonly maxBatchSize: number;
  readonly maxIterTimes: number;
  readonly maxPreemptCount: number;
  readonly maxQueueDelayMicroseconds: number;
  readonly maxFirstTokenWaitTime: number;
  readonly maxN: number;
  readonly supportSelectBatch: boolean;
  readonly bufferResponseEnabled: boolean;
  readonly prefillExpectedTime: number;
  readonly decodeExpectedTime: number;
  /** Deprecated and ignored (see plugin_params). */
  readonly enablePrefixCache?: boolean;
}

interface BackendConfig {
  readonly backendName: string;
  readonly modelInstanceNumber: number;
  readonly npuDeviceIds: readonly (readonly number[])[];
  readonly tokenizerProcessNumber: number;
  readonly multiNodesInferEnabled: boolean;
  readonly multiNodesInferPort: number;
  readonly interNodeTLSEnabled: boolean;
  readonly ModelDeployConfig: ModelDeployConfig;
  readonly ScheduleConfig: ScheduleConfig;
  /** Prism's: KV-cache events (engine/kv-events.ts); endpoint '' = off, topic '' = the default. */
  readonly KvEventsConfig: { readonly endpoint: string; readonly topic: string };
  readonly [interNodeTlsField: `interNode${string}`]: unknown;
}

interface LogConfig {
  readonly logLevel: 'Verbose' | 'Debug' | 'Info' | 'Warning' | 'Warn' | 'Error' | 'Critical';
  readonly logFileSize: number;
  readonly logFileNum: number;
  readonly logPath: string;
  /** Prism: the request log's format, destination (file or stderr) and whether it shows prompts. */
  readonly logFormat: 'text' | 'json';
  readonly logToFile: boolean;
  readonly logPrompts: boolean;
}

export interface PrismConfigFile {
  readonly Version: '1.0.0';
  readonly ServerConfig: ServerConfig;
  readonly BackendConfig: BackendConfig;
  readonly LogConfig: LogConfig;
  readonly EnableDynamicAdjustTimeoutConfig: boolean;
}

/** `plugin_params` parsed (plugin-params.ts). */
export interface PluginParams {
  readonly prefixCache: boolean;
  /** Multi-token prediction: refused when the model is loaded unless it has MTP heads. */
  readonly mtp: boolean;
  /** MindIE's lookup decoding: the n-gram proposer (engine/speculative/ngram.ts). */
  readonly memoryDecoding?: boolean;
  readonly numSpeculativeTokens?: number;
  /** memory_decoding's adaptive draft length (default on). */
  readonly dynamicAlgo?: boolean;
}

export interface ResolvedConfig {
  /** The config file it came from, or undefined when Prism runs on defaults (no file). */
  readonly source: string | undefined;
  readonly file: PrismConfigFile;
  /** Plugins of the served model (ModelConfig[0]). */
  readonly plugins: PluginParams;
  /** Notices for the operator (deprecated or ignored fields); the CLI logs them. */
  readonly warnings: readonly string[];
}
