/**
 * What the pooling routes of every family share: their inputs as engine PoolingInputs (text,
 * token ids, pairs), vLLM's truncate_prompt_tokens and TEI's truncate / truncation_direction as
 * the engine's truncation, running the request (the request log counts it as pooling), and
 * vectors as base64 float32 (OpenAI's encoding_format). Bad shapes are 4xx naming the field.
 */
import type { PoolingInput, PoolingRequest, PoolingResult } from '../../engine/api.js';
import { newRequestId } from './engine-calls.js';
import { assertAccepting, resolveRequestedModel, type GatewayContext } from './gateway-context.js';
import { HttpError, invalid } from './http-error.js';
import { notePooling } from './request-log.js';
import { clientGoneSignal } from './sse.js';
import type { Context } from 'koa';

/** OpenAI's `input` (and vLLM's, TEI's `inputs`): a string, strings, token ids, or lists of token ids. */
export const textsOrTokensSchema = {
  anyOf: [
    { type: 'string' },
    { type: 'array', items: { type: 'string' } },
    { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } },
    { type: 'array', items: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } } },
  ],
};

export type TextsOrTokens = string | string[] | number[] | number[][];

export function textsOrTokens(input: TextsOrTokens): PoolingInput[] {
  if (typeof input === 'string') return [{ text: input }];
  if (input.length > 0 && input.every((x) => typeof x === 'number')) return [{ ids: input as number[] }];
  return (input as (string | number[])[]).map((x) => (typeof x === 'string' ? { text: x } : { ids: x }));
}

/** vLLM's truncate_prompt_tokens: -1 the model's limit, k > 0 the last k tokens; absent/null: refuse longer inputs. */
export function vllmTruncation(value: number | null | undefined): Pick<PoolingRequest, 'truncate'> {
  if (value === undefined || value === null) return {};
  if (value === -1) return { truncate: { direction: 'left' } };
  if (!Number.isInteger(value) || value < 1)
    throw invalid('truncate_prompt_tokens', 'must be -1 or a positive integer');
  return { truncate: { direction: 'left', maxTokens: value } };
}

/** TEI's truncate + truncation_direction ("Right" keeps the start, TEI's default). */
export function teiTruncation(
  truncate: boolean | null | undefined,
  direction: string | null | undefined,
): Pick<PoolingRequest, 'truncate'> {
  if (!truncate) return {};
  return { truncate: { direction: direction === 'Left' || direction === 'left' ? 'left' : 'right' } };
}

export const vllmTruncationSchema = { anyOf: [{ type: 'integer', minimum: -1 }, { type: 'null' }] };

/** vLLM's `priority` on its pooling requests (lower first, under --scheduling-policy priority). */
export const vllmPrioritySchema = {
  anyOf: [{ type: 'integer', minimum: -(2 ** 31 - 1), maximum: 2 ** 31 - 1 }, { type: 'null' }],
};

/** The request's priority, when it gives one (the engine refuses a non-zero one unless it schedules by priority). */
export function vllmPriority(value: number | null | undefined): Pick<PoolingRequest, 'priority'> {
  return value === undefined || value === null ? {} : { priority: value };
}

/** Little-endian float32 bytes in base64 (what the openai SDKs decode). */
export function base64Floats(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** Plain numbers (JSON), rounded through float32 exactly as the model computed them. */
export function floats(v: Float32Array): number[] {
  return Array.from(v);
}

export interface PoolingCall {
  readonly id: string;
  readonly model: string;
  readonly result: PoolingResult;
}

/**
 * Runs one pooling request for a route: the model it names (the served one, as every family
 * resolves it), the gateway accepting, the client's disconnect cancelling it.
 */
export async function runPooling(
  gw: GatewayContext,
  ctx: Context,
  modelName: unknown,
  request: PoolingRequest,
  idPrefix: string,
): Promise<PoolingCall> {
  const model = await resolveRequestedModel(gw, modelName);
  if (model !== gw.info.modelName) throw new HttpError('not_found', `Model ${model} not found.`, 'model');
  assertAccepting(gw);
  const id = newRequestId(idPrefix);
  const req: PoolingRequest = { ...request, requestId: id };
  notePooling(req);
  const result = await gw.engine.pool(req, clientGoneSignal(ctx));
  notePooling(req, result);
  return { id, model, result };
}
