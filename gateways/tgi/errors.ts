/** TGI error bodies: `{"error": "...", "error_type": "..."}` with TGI's own type words. */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import { httpStatusOf, type HttpError } from '../shared/http-error.js';

const typeOf: Record<HttpError['kind'], string> = {
  validation: 'validation',
  bad_request: 'validation',
  bad_json: 'validation',
  too_large: 'validation',
  unauthorized: 'unauthorized',
  not_found: 'not_found',
  overloaded: 'overloaded',
  unavailable: 'unavailable',
  generation: 'generation',
  not_supported: 'not_supported',
  internal: 'incomplete_generation',
};

export function tgiErrorBody(err: HttpError): { error: string; error_type: string } {
  return { error: err.message, error_type: typeOf[err.kind] };
}

export const tgiErrorFormat: ErrorFormatter = (err) => ({
  status: httpStatusOf(err.kind, 'tgi'),
  body: tgiErrorBody(err),
});
