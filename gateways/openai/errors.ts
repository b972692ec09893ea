/** OpenAI error bodies: `{"error":{"message","type","param","code"}}` (the shape the openai SDKs parse). */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import type { HttpError } from '../shared/http-error.js';

const replyOf: Record<HttpError['kind'], { status: number; type: string; code: string | null }> = {
  validation: { status: 400, type: 'invalid_request_error', code: null },
  bad_json: { status: 400, type: 'invalid_request_error', code: 'invalid_json' },
  too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
  unauthorized: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' },
  not_found: { status: 404, type: 'invalid_request_error', code: 'model_not_found' },
  overloaded: { status: 429, type: 'server_overloaded', code: 'queue_full' },
  unavailable: { status: 503, type: 'service_unavailable', code: null },
  generation: { status: 424, type: 'generation_error', code: null },
  not_supported: { status: 501, type: 'not_implemented', code: null },
  internal: { status: 500, type: 'internal_error', code: null },
};

export function openaiErrorBody(err: HttpError): {
  error: { message: string; type: string; param: string | null; code: string | null };
} {
  const r = replyOf[err.kind];
  return { error: { message: err.message, type: r.type, param: err.field ?? null, code: r.code } };
}

export const openaiErrorFormat: ErrorFormatter = (err) => ({
  status: replyOf[err.kind].status,
  body: openaiErrorBody(err),
});
