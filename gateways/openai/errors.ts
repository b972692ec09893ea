/** OpenAI error bodies: `{"error":{"message","type","param","code"}}` (the shape the openai SDKs parse). */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import { httpStatusOf, type HttpError } from '../shared/http-error.js';

const wordsOf: Record<HttpError['kind'], { type: string; code: string | null }> = {
  validation: { type: 'invalid_request_error', code: null },
  bad_request: { type: 'invalid_request_error', code: null },
  bad_json: { type: 'invalid_request_error', code: 'invalid_json' },
  too_large: { type: 'invalid_request_error', code: 'request_too_large' },
  unauthorized: { type: 'invalid_request_error', code: 'invalid_api_key' },
  not_found: { type: 'invalid_request_error', code: 'model_not_found' },
  overloaded: { type: 'server_overloaded', code: 'queue_full' },
  unavailable: { type: 'service_unavailable', code: null },
  generation: { type: 'generation_error', code: null },
  not_supported: { type: 'not_implemented', code: null },
  internal: { type: 'internal_error', code: null },
};

export function openaiErrorBody(err: HttpError): {
  error: { message: string; type: string; param: string | null; code: string | null };
} {
  const w = wordsOf[err.kind];
  return { error: { message: err.message, type: w.type, param: err.field ?? null, code: w.code } };
}

export const openaiErrorFormat: ErrorFormatter = (err) => ({
  status: httpStatusOf(err.kind, 'openai'),
  body: openaiErrorBody(err),
});
