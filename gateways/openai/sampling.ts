/**
 * The sampling fields shared by /v1/chat/completions and /v1/completions (OpenAI's plus vLLM's
 * extra ones), their schema, and their mapping onto the engine's SamplingParams. Ranges that
 * depend on the model (max_tokens vs context) are checked by the engine.
 */
import type { SamplingParams } from '../../engine/api.js';
import { beamSamplingParams, beamSchemaProperties, type BeamFields } from '../shared/beam-fields.js';
import { HttpError } from '../shared/http-error.js';
import {
  samplingExtras,
  samplingExtrasSchemaProperties,
  type SamplingExtraFields,
} from '../shared/sampling-extras.js';
import { kvTransferSchemaProperty, type KvTransferBody } from './kv-transfer.js';
import { nullable } from '../shared/schema.js';
import { refuseUnserved, UNSERVED_FIELDS } from '../shared/unserved-fields.js';

export const samplingSchemaProperties = {
  model: { type: 'string' },
  max_tokens: nullable({ type: 'integer', minimum: 1 }),
  max_completion_tokens: nullable({ type: 'integer', minimum: 1 }),
  temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
  top_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
  top_k: nullable({ type: 'integer', minimum: -1 }),
  n: nullable({ type: 'integer', minimum: 1, maximum: 128 }),
  stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 64 }] }),
  stop_token_ids: nullable({ type: 'array', items: { type: 'integer', minimum: 0 } }),
  // -1 is llama.cpp's "random" (as absent); the engine's seeds are otherwise unsigned.
  seed: nullable({ type: 'integer', minimum: -1 }),
  // vLLM's: keep the prompt's last N tokens (-1: as many as the context allows).
  truncate_prompt_tokens: nullable({ type: 'integer', minimum: -1 }),
  presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  repetition_penalty: nullable({ type: 'number', exclusiveMinimum: 0 }),
  stream: nullable({ type: 'boolean' }),
  stream_options: nullable({
    type: 'object',
    properties: { include_usage: { type: 'boolean' }, continuous_usage_stats: { type: 'boolean' } },
  }),
  ignore_eos: nullable({ type: 'boolean' }),
  skip_special_tokens: nullable({ type: 'boolean' }),
  include_stop_str_in_output: nullable({ type: 'boolean' }),
  ...samplingExtrasSchemaProperties,
  ...beamSchemaProperties,
  user: nullable({ type: 'string' }),
  ...kvTransferSchemaProperty,
  // Accepted at their off values only (shared/unserved-fields.ts).
  ...Object.fromEntries(UNSERVED_FIELDS.map((f) => [f, {}])),
} as const;

export interface SamplingFields extends BeamFields, SamplingExtraFields {
  model?: string;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; continuous_usage_stats?: boolean } | null;
  ignore_eos?: boolean | null;
  skip_special_tokens?: boolean | null;
  include_stop_str_in_output?: boolean | null;
  truncate_prompt_tokens?: number | null;
  user?: string | null;
  kv_transfer_params?: KvTransferBody | null;
}

/** Drops nulls so absent and null both mean "engine default". */
function def<T>(v: T | null | undefined): T | undefined {
  return v === null ? undefined : v;
}

export function toSamplingParams(
  b: SamplingFields,
  extra: { logprobs?: boolean; topLogprobs?: number; bestOf?: number },
  /** The engine's longest prompt, what truncate_prompt_tokens -1 keeps. */
  maxInputTokenLen: number,
): SamplingParams {
  refuseUnserved(b as Record<string, unknown>);
  const truncate = def(b.truncate_prompt_tokens);
  if (truncate === 0)
    throw new HttpError(
      'validation',
      'truncate_prompt_tokens: must be >= 1, or -1',
      'truncate_prompt_tokens',
    );
  if (b.stream_options && !b.stream) {
    throw new HttpError(
      'validation',
      'stream_options: is only allowed when stream is true',
      'stream_options',
    );
  }
  const stop = def(b.stop);
  return {
    maxNewTokens: def(b.max_completion_tokens) ?? def(b.max_tokens),
    temperature: def(b.temperature),
    topP: def(b.top_p),
    // vLLM: top_k -1 (or 0) disables top-k.
    topK: b.top_k === -1 || b.top_k === 0 ? undefined : def(b.top_k),
    n: def(b.n),
    bestOf: extra.bestOf,
    stop: stop === undefined ? undefined : typeof stop === 'string' ? [stop] : stop,
    stopTokenIds: def(b.stop_token_ids),
    seed: b.seed === -1 ? undefined : def(b.seed),
    ...(truncate !== undefined ? { truncate: truncate === -1 ? maxInputTokenLen : truncate } : {}),
    presencePenalty: def(b.presence_penalty),
    frequencyPenalty: def(b.frequency_penalty),
    repetitionPenalty: def(b.repetition_penalty),
    ignoreEos: def(b.ignore_eos),
    skipSpecialTokens: def(b.skip_special_tokens),
    includeStopStrInOutput: def(b.include_stop_str_in_output),
    logprobs: extra.logprobs,
    topLogprobs: extra.topLogprobs,
    ...samplingExtras(b),
    ...beamSamplingParams(b, b.stream === true),
  };
}

/** OpenAI finish reasons from the engine's. A cancelled sequence was aborted (vLLM's word). */
export function openaiFinishReason(reason: string): string {
  return reason === 'cancelled' ? 'abort' : reason;
}

export function openaiUsage(u: {
  promptTokens: number;
  completionTokens: number;
  cachedPromptTokens: number;
}): object {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedPromptTokens },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}
