/**
 * JSON Schema (draft-07) of MindIE's `config.json`, with the defaults and bounds of
 * shared/reference/mindie-compat.md §2 and SPEC.md ("Configuration records"). ajv applies the
 * defaults (`useDefaults`) and reports every violation at once (`allErrors`); unknown fields
 * are errors (`additionalProperties: false` on every section). Rules that span fields
 * (maxPrefillTokens ≥ maxInputTokenLen, …) live in cross-field-rules.ts, since JSON Schema
 * cannot compare two values.
 */

type Schema = Record<string, unknown>;

const int = (def: number | undefined, minimum: number, maximum?: number): Schema => ({
  type: 'integer',
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
  ...(def !== undefined ? { default: def } : {}),
});
const num = (def: number | undefined, minimum: number, maximum?: number): Schema => ({
  type: 'number',
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
  ...(def !== undefined ? { default: def } : {}),
});
const bool = (def?: boolean): Schema => ({ type: 'boolean', ...(def !== undefined ? { default: def } : {}) });
/** File paths: MindIE caps them at 4096 characters. */
const path = (def?: string): Schema => ({
  type: 'string',
  maxLength: 4096,
  ...(def !== undefined ? { default: def } : {}),
});
/** TLS file lists: a set of 1–3 names. */
const fileSet = (def?: string[]): Schema => ({
  type: 'array',
  items: { type: 'string', minLength: 1, maxLength: 4096 },
  minItems: 1,
  maxItems: 3,
  uniqueItems: true,
  ...(def !== undefined ? { default: def } : {}),
});
const port = (def: number): Schema => int(def, 1024, 65535);
const section = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: 'object',
  additionalProperties: false,
  properties,
  default: {},
  ...extra,
});

/** Letters, digits, `-` `.` `_`; not starting or ending with `-` `.` `_`; ≤ 256 characters. */
export const MODEL_NAME_PATTERN = '^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,254}[A-Za-z0-9])?$';
/** Adapter names: letters, digits, `-` `_`; not starting or ending with `-` `_`; ≤ 256 characters. */
export const ADAPTER_NAME_PATTERN = '^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,254}[A-Za-z0-9])?$';

/** API keys: sendable as a Bearer token (visible ASCII, no spaces). */
const apiKeyList: Schema = {
  type: 'array',
  items: { type: 'string', pattern: '^[\\x21-\\x7e]{1,4096}$' },
  maxItems: 256,
};

/** Prism's limits that protect the process (gateways/shared/limits.ts; defaults in config/README.md). */
const limitsSection = section({
  maxJsonDepth: int(64, 1, 1024),
  maxArrayLength: int(100000, 1, 100000000),
  maxMessages: int(4096, 1, 1000000),
  maxTools: int(256, 1, 100000),
  maxHeaderBytes: int(16384, 1024, 1048576),
  maxHeaderCount: int(100, 8, 2000),
  headersTimeoutMs: int(10000, 100, 3600000),
  requestTimeoutMs: int(60000, 100, 3600000),
  keepAliveTimeoutMs: int(5000, 100, 3600000),
});

const serverConfig = section({
  ipAddress: { type: 'string', minLength: 1, maxLength: 253, default: '127.0.0.1' },
  managementIpAddress: { type: 'string', minLength: 1, maxLength: 253, default: '127.0.0.2' },
  port: port(1025),
  managementPort: port(1026),
  metricsPort: port(1027),
  allowAllZeroIpListening: bool(false),
  maxLinkNum: int(1000, 1, 4096),
  fullTextEnabled: bool(false),
  inferMode: { enum: ['standard', 'dmi'], default: 'standard' },
  openAiSupport: { type: 'string', default: 'vllm' },
  tokenTimeout: int(600, 1, 3600),
  e2eTimeout: int(600, 1, 65535),
  maxRequestLength: int(40, 1, 100),
  distDPServerEnabled: bool(false),
  HealthCheckConfig: section({ npuUsageThreshold: int(10, 0, 100) }),
  httpsEnabled: bool(true),
  tlsCaPath: path('security/ca/'),
  tlsCaFile: fileSet(['ca.pem']),
  tlsCert: path('security/certs/server.pem'),
  tlsPk: path('security/keys/server.key.pem'),
  tlsPkPwd: path('security/pass/key_pwd.txt'),
  tlsCrlPath: path('security/certs/'),
  tlsCrlFiles: fileSet(['server_crl.pem']),
  kmcKsfMaster: path('tools/pmt/master/ksfa'),
  kmcKsfStandby: path('tools/pmt/standby/ksfb'),
  managementTlsCaFile: fileSet(['management_ca.pem']),
  managementTlsCert: path('security/certs/management/server.pem'),
  managementTlsPk: path('security/keys/management/server.key.pem'),
  managementTlsPkPwd: path('security/pass/management/key_pwd.txt'),
  managementTlsCrlPath: path('security/management/certs/'),
  managementTlsCrlFiles: fileSet(['server_crl.pem']),
  metricsTlsCaFile: fileSet(['metrics_ca.pem']),
  metricsTlsCert: path('security/certs/metrics/server.pem'),
  metricsTlsPk: path('security/keys/metrics/server.key.pem'),
  metricsTlsPkPwd: path('security/pass/metrics/key_pwd.txt'),
  metricsTlsCrlPath: path('security/metrics/certs/'),
  metricsTlsCrlFiles: fileSet(['server_crl.pem']),
  interCommTLSEnabled: bool(true),
  interCommPort: port(1121),
  interCommTlsCaPath: path(),
  interCommTlsCaFiles: fileSet(),
  interCommTlsCert: path(),
  interCommTlsPk: path(),
  interCommTlsPkPwd: path(),
  interCommTlsCrlPath: path(),
  interCommTlsCrlFiles: fileSet(),
  // Prism extensions (not in MindIE): API keys and limits.
  apiKeys: apiKeyList,
  apiKeyFile: path(),
  managementApiKeys: apiKeyList,
  managementApiKeyFile: path(),
  openHealthAndMetrics: bool(true),
  /** A keyless management listener off the loopback is refused unless this says it is on purpose. */
  allowOpenManagement: bool(false),
  limits: limitsSection,
});

const modelTypeOptions: Schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    chat_template: { type: 'string', maxLength: 4096, default: '' },
    tool_call_options: {
      type: 'object',
      additionalProperties: false,
      properties: { tool_call_parser: { type: 'string', maxLength: 256, default: '' } },
    },
    kv_cache_options: {
      type: 'object',
      additionalProperties: false,
      properties: { enable_nz: { type: 'boolean' } },
    },
  },
};

const modelConfig: Schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    modelInstanceType: { enum: ['Standard', 'StandardMock'], default: 'Standard' },
    modelName: { type: 'string', pattern: MODEL_NAME_PATTERN, default: 'llama_65b' },
    modelWeightPath: { type: 'string', minLength: 1, maxLength: 4096 },
    worldSize: int(4, 1, 1048576),
    cpuMemSize: int(0, 0),
    npuMemSize: int(-1, -1),
    /** MindIE's 'atb' / 'torch' (NPU backends: the CPU here), or Prism's 'cpu' and 'cuda'. */
    backendType: { enum: ['atb', 'torch', 'cpu', 'cuda'], default: 'atb' },
    trustRemoteCode: bool(false),
    kv_trans_timeout: int(10, 1),
    kv_link_timeout: int(1080, 1),
    async_scheduler_wait_time: num(undefined, 0),
    /** A JSON object encoded as a string (checked by plugin-params.ts). */
    plugin_params: { type: 'string', maxLength: 65536 },
    models: {
      type: 'object',
      additionalProperties: modelTypeOptions,
      propertyNames: { pattern: '^[A-Za-z0-9_.-]{1,128}$' },
    },
  },
};

const loraModule: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'path', 'baseModelName'],
  properties: {
    name: { type: 'string', pattern: ADAPTER_NAME_PATTERN },
    path: { type: 'string', minLength: 1, maxLength: 4096, pattern: '^/' },
    baseModelName: { type: 'string', pattern: MODEL_NAME_PATTERN },
  },
};

const modelDeployConfig = section({
  maxSeqLen: int(2560, 1),
  maxInputTokenLen: int(2048, 1, 4194304),
  truncation: { enum: [true, false, -1, 0, 1], default: 0 },
  ModelConfig: { type: 'array', items: modelConfig, minItems: 1, default: [{}] },
  LoraModules: { type: 'array', items: loraModule, default: [] },
  maxLoras: int(0, 0, 4294967295),
  maxCpuLoras: int(0, 0, 4294967295),
  maxLoraRank: int(0, 0, 4294967295),
});

const scheduleConfig = section({
  templateType: { enum: ['Standard', 'Mix'], default: 'Standard' },
  templateName: { type: 'string', default: 'Standard_LLM' },
  cacheBlockSize: int(128, 1, 128),
  maxPrefillBatchSize: int(50, 0),
  maxPrefillTokens: int(8192, 1, 4194304),
  prefillTimeMsPerReq: int(150, 0, 1000),
  decodeTimeMsPerReq: int(50, 0, 1000),
  prefillPolicyType: { const: 0, default: 0 },
  decodePolicyType: { const: 0, default: 0 },
  maxBatchSize: int(200, 1, 819200),
  maxIterTimes: int(512, 1),
  maxPreemptCount: int(0, 0),
  maxQueueDelayMicroseconds: int(5000, 500, 1000000),
  maxFirstTokenWaitTime: int(2500, 0, 3600000),
  maxN: int(128, 1, 8192),
  supportSelectBatch: bool(false),
  bufferResponseEnabled: bool(false),
  prefillExpectedTime: int(1500, 0),
  decodeExpectedTime: int(50, 0),
  /** Deprecated (prefix cache is a plugin now): accepted, ignored, with a notice. */
  enablePrefixCache: bool(),
});

/** ZeroMQ addresses the KV-event publisher opens ('' = off). */
export const KV_EVENTS_ENDPOINT_PATTERN = '^$|^tcp://[^\\s/]+:(\\d{1,5}|\\*)$|^ipc://\\S+$|^inproc://\\S+$';

/**
 * Prism's extension (not in MindIE): KV-cache events for prefix-aware routers
 * (engine/kv-events.ts). An empty endpoint turns them off; an empty topic takes the default.
 */
const kvEventsConfig = section({
  endpoint: { type: 'string', default: '', pattern: KV_EVENTS_ENDPOINT_PATTERN },
  topic: { type: 'string', maxLength: 1024, default: '' },
});

const backendConfig = section({
  backendName: { type: 'string', default: 'mindieservice_llm_engine' },
  modelInstanceNumber: int(1, 1, 10),
  npuDeviceIds: {
    type: 'array',
    items: { type: 'array', items: { type: 'integer', minimum: 0 } },
    default: [[0, 1, 2, 3]],
  },
  tokenizerProcessNumber: int(8, 1, 32),
  multiNodesInferEnabled: bool(false),
  multiNodesInferPort: port(1120),
  interNodeTLSEnabled: bool(true),
  interNodeTlsCaPath: path(),
  interNodeTlsCaFiles: fileSet(),
  interNodeTlsCert: path(),
  interNodeTlsPk: path(),
  interNodeTlsPkPwd: path(),
  interNodeTlsCrlPath: path(),
  interNodeTlsCrlFiles: fileSet(),
  interNodeKmcKsfMaster: path(),
  interNodeKmcKsfStandby: path(),
  ModelDeployConfig: modelDeployConfig,
  ScheduleConfig: scheduleConfig,
  KvEventsConfig: kvEventsConfig,
});

/**
 * MindIE's LogConfig fields (names and defaults of its sample config.json), and Prism's own
 * for the request log (gateways/shared/request-log.ts): `logFormat`, `logToFile` (else
 * stderr), `logPrompts` (write prompts on request lines).
 */
const logConfig = section({
  logLevel: { enum: ['Verbose', 'Debug', 'Info', 'Warning', 'Warn', 'Error', 'Critical'], default: 'Info' },
  logFileSize: int(20, 1, 500),
  logFileNum: int(20, 1, 64),
  logPath: path('logs/mindie-server.log'),
  logFormat: { enum: ['text', 'json'], default: 'text' },
  logToFile: bool(false),
  logPrompts: bool(false),
});

export const configSchema: Schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://prism.invalid/schemas/mindie-config.json',
  title: 'MindIE-style config.json (Prism)',
  type: 'object',
  additionalProperties: false,
  properties: {
    Version: { const: '1.0.0', default: '1.0.0' },
    ServerConfig: serverConfig,
    BackendConfig: backendConfig,
    LogConfig: logConfig,
    EnableDynamicAdjustTimeoutConfig: bool(false),
  },
};
