/**
 * Every HTTP route of every family (docs/api.md), with a plausible body for the POST routes and
 * the fields the fuzzer mutates. `/stopService` is left out on purpose: it stops the server the
 * fuzzer is testing (the fault tests cover it).
 */

export type Family = 'openai' | 'tgi' | 'mindie' | 'anthropic' | 'ollama';
export type ListenerName = 'service' | 'management' | 'metrics';

export interface Route {
  readonly listener: ListenerName;
  readonly method: 'GET' | 'POST';
  /** The path for a model name (already URL-encoded by the caller). */
  readonly path: (model: string) => string;
  /** Error shape of the family; `undefined` = decided by the body (POST /generate). */
  readonly family: Family;
  /** A request the route answers with 2xx (tiny generations: the fuzz engine caps tokens). */
  readonly body?: (model: string) => Record<string, unknown>;
  /** Top-level fields to mutate, and nested ones as `parameters.x`. */
  readonly fields?: readonly string[];
}

const SAMPLING = ['temperature', 'top_p', 'top_k', 'seed', 'stop', 'n', 'best_of', 'presence_penalty'];
const TGI_PARAMS = [
  'parameters',
  'parameters.max_new_tokens',
  'parameters.temperature',
  'parameters.top_k',
  'parameters.top_p',
  'parameters.do_sample',
  'parameters.stop',
  'parameters.seed',
  'parameters.details',
  'parameters.decoder_input_details',
  'parameters.return_full_text',
  'parameters.truncate',
  'parameters.typical_p',
  'parameters.repetition_penalty',
  'parameters.best_of',
  'parameters.watermark',
  'parameters.top_n_tokens',
  'parameters.grammar',
];

export const routes: readonly Route[] = [
  {
    listener: 'service',
    method: 'POST',
    path: () => '/v1/chat/completions',
    family: 'openai',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }),
    fields: [
      'model',
      'messages',
      'messages.0',
      'messages.0.role',
      'messages.0.content',
      'max_tokens',
      'max_completion_tokens',
      'stream',
      'stream_options',
      'logprobs',
      'top_logprobs',
      'tools',
      'tool_choice',
      'response_format',
      'logit_bias',
      'user',
      'frequency_penalty',
      ...SAMPLING,
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/v1/completions',
    family: 'openai',
    body: (model) => ({ model, prompt: 'Hi', max_tokens: 2 }),
    fields: [
      'model',
      'prompt',
      'max_tokens',
      'stream',
      'echo',
      'logprobs',
      'suffix',
      'stream_options',
      ...SAMPLING,
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/v1/messages',
    family: 'anthropic',
    body: (model) => ({ model, max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] }),
    fields: [
      'model',
      'max_tokens',
      'messages',
      'messages.0.content',
      'system',
      'stream',
      'tools',
      'tool_choice',
      'stop_sequences',
      'thinking',
      'temperature',
      'top_k',
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/api/chat',
    family: 'ollama',
    body: (model) => ({
      model,
      stream: false,
      messages: [{ role: 'user', content: 'Hi' }],
      options: { num_predict: 2 },
    }),
    fields: [
      'model',
      'messages',
      'messages.0.content',
      'stream',
      'format',
      'tools',
      'think',
      'options',
      'options.num_predict',
      'options.num_ctx',
      'options.seed',
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/api/generate',
    family: 'ollama',
    body: (model) => ({ model, prompt: 'Hi', options: { num_predict: 2 } }),
    fields: [
      'model',
      'prompt',
      'system',
      'raw',
      'stream',
      'format',
      'options',
      'options.stop',
      'options.temperature',
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/tokenize',
    family: 'openai',
    body: () => ({ prompt: 'Hi', return_token_strs: true }),
    fields: ['prompt', 'messages', 'content', 'add_special_tokens', 'with_pieces'],
  },
  { listener: 'service', method: 'GET', path: () => '/api/tags', family: 'ollama' },
  { listener: 'service', method: 'GET', path: () => '/v1/models', family: 'openai' },
  { listener: 'service', method: 'GET', path: (m) => `/v1/models/${m}`, family: 'openai' },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/generate',
    family: 'tgi',
    body: () => ({ inputs: 'Hi', parameters: { max_new_tokens: 2 } }),
    fields: ['inputs', 'stream', ...TGI_PARAMS],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/generate',
    family: 'mindie',
    body: () => ({ prompt: 'Hi', max_tokens: 2 }),
    fields: ['prompt', 'max_tokens', 'stream', 'ignore_eos', 'stop_token_ids', ...SAMPLING],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/generate_stream',
    family: 'tgi',
    body: () => ({ inputs: 'Hi', parameters: { max_new_tokens: 2 } }),
    fields: ['inputs', ...TGI_PARAMS],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/',
    family: 'tgi',
    body: () => ({ inputs: 'Hi', parameters: { max_new_tokens: 2 }, stream: false }),
    fields: ['inputs', 'stream', ...TGI_PARAMS],
  },
  { listener: 'service', method: 'GET', path: () => '/info', family: 'tgi' },
  { listener: 'service', method: 'GET', path: () => '/health', family: 'mindie' },
  { listener: 'service', method: 'GET', path: () => '/v2', family: 'mindie' },
  { listener: 'service', method: 'GET', path: () => '/v2/health/live', family: 'mindie' },
  { listener: 'service', method: 'GET', path: () => '/v2/health/ready', family: 'mindie' },
  { listener: 'service', method: 'GET', path: (m) => `/v2/models/${m}`, family: 'mindie' },
  { listener: 'service', method: 'GET', path: (m) => `/v2/models/${m}/ready`, family: 'mindie' },
  { listener: 'service', method: 'GET', path: (m) => `/v2/models/${m}/config`, family: 'mindie' },
  {
    listener: 'service',
    method: 'POST',
    path: (m) => `/v2/models/${m}/infer`,
    family: 'mindie',
    body: () => ({
      id: 'fuzz',
      inputs: [{ name: 'input0', shape: [1, 2], datatype: 'UINT32', data: [1, 2] }],
      parameters: { max_new_tokens: 2 },
    }),
    fields: [
      'id',
      'inputs',
      'inputs.0',
      'inputs.0.shape',
      'inputs.0.datatype',
      'inputs.0.data',
      'outputs',
      'parameters',
      'parameters.max_new_tokens',
      'parameters.temperature',
      'parameters.top_k',
    ],
  },
  {
    listener: 'service',
    method: 'POST',
    path: (m) => `/v2/models/${m}/generate`,
    family: 'mindie',
    body: () => ({ text_input: 'Hi', parameters: { max_new_tokens: 2 } }),
    fields: ['text_input', 'id', ...TGI_PARAMS],
  },
  {
    listener: 'service',
    method: 'POST',
    path: (m) => `/v2/models/${m}/generate_stream`,
    family: 'mindie',
    body: () => ({ text_input: 'Hi', parameters: { max_new_tokens: 2 } }),
    fields: ['text_input', 'id', ...TGI_PARAMS],
  },
  {
    listener: 'service',
    method: 'POST',
    path: (m) => `/v2/models/${m}/stopInfer`,
    family: 'mindie',
    body: () => ({ id: 'no-such-request' }),
    fields: ['id'],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/infer',
    family: 'mindie',
    body: () => ({ inputs: 'Hi', stream: false, max_tokens: 2 }),
    fields: ['inputs', 'input_id', 'stream', 'max_tokens', 'max_new_tokens', 'details', ...SAMPLING],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/infer_token',
    family: 'mindie',
    body: () => ({ input_id: [1, 2, 3], stream: false, max_tokens: 2 }),
    fields: ['input_id', 'stream', 'max_tokens', ...SAMPLING],
  },
  {
    listener: 'service',
    method: 'POST',
    path: () => '/v1/tokenizer',
    family: 'mindie',
    body: () => ({ inputs: 'Hi there' }),
    fields: ['inputs'],
  },
  { listener: 'service', method: 'GET', path: () => '/health/timed', family: 'mindie' },
  { listener: 'service', method: 'GET', path: () => '/health/timed-5', family: 'mindie' },
  { listener: 'management', method: 'GET', path: (m) => `/v2/models/${m}/getSlotCount`, family: 'mindie' },
  { listener: 'management', method: 'GET', path: () => '/v1/config', family: 'mindie' },
  { listener: 'management', method: 'GET', path: () => '/v1/status', family: 'mindie' },
  { listener: 'management', method: 'GET', path: () => '/v2/status', family: 'mindie' },
  { listener: 'management', method: 'POST', path: () => '/v1/role/flex', family: 'mindie', body: () => ({}) },
  // Not /v2/role/prefill or /decode: since split prefill/decode is built, those make the
  // engine refuse whole requests (503), which every later fuzzed request would then meet.
  { listener: 'management', method: 'POST', path: () => '/v2/role/flex', family: 'mindie', body: () => ({}) },
  { listener: 'management', method: 'GET', path: () => '/metrics-json', family: 'mindie' },
  {
    listener: 'management',
    method: 'POST',
    path: () => '/v1/load_lora_adapter',
    family: 'mindie',
    body: () => ({ lora_name: 'a', lora_path: '/tmp/a' }),
    fields: ['lora_name', 'lora_path'],
  },
  {
    listener: 'management',
    method: 'POST',
    path: () => '/v1/unload_lora_adapter',
    family: 'mindie',
    body: () => ({ lora_name: 'a' }),
    fields: ['lora_name'],
  },
  { listener: 'metrics', method: 'GET', path: () => '/metrics', family: 'mindie' },
];

/** The family whose error shape a path answers in (independent of gateways/server.ts on purpose). */
export function familyOfPath(path: string): Family {
  const p = path.split(/[?#]/)[0];
  // Routes match case-insensitively and with a trailing slash (the router's defaults).
  if (/^\/v1\/messages(\/|$)/i.test(p)) return 'anthropic';
  if (/^\/api(\/|$)/i.test(p)) return 'ollama';
  if (/^\/(tokenize|detokenize|apply-template)\/?$/i.test(p)) return 'openai';
  if (/^\/v1\/(chat\/completions|completions|models)(\/|$)/i.test(p)) return 'openai';
  if (/^\/(generate|generate_stream|info)?\/?$/i.test(p)) return 'tgi';
  return 'mindie';
}
