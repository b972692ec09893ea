/** TGI error bodies: `{"error": "...", "error_type": "..."}` with TGI's own type words. */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import type { HttpError } from '../shared/http-error.js';

const replyOf: Record<HttpError['kind'], { status: number; type: string }> = {
  validation: { status: 422, type: 'validation' },
  bad_json: { status: 422, type: 'validation' },
  too_large: { status: 413, type: 'validation' },
  unauthorized: { status: 401, type: 'unauthorized' },
  not_found: { status: 404, type: 'not_found' },
  overloaded: { status: 429, type: 'overloaded' },
  unavailable: { status: 503, type: 'unavailable' },
  generation: { status: 424, type: 'generation' },
  not_supported: { status: 501, type: 'not_supported' },
  internal: { status: 500, type: 'incomplete_generation' },
};

export function tgiErrorBody(err: HttpError): { error: string; error_type: string } {
  return { error: err.message, error_type: replyOf[err.kind].type };
}

export const tgiErrorFormat: ErrorFormatter = (err) => ({
  status: replyOf[err.kind].status,
  body: tgiErrorBody(err),
});
