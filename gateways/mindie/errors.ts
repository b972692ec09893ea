/**
 * MindIE's error bodies, `{"error": "...", "error_type": "..."}` with MindIE's type words
 * (mindie-compat.md §3): the shape of the native routes, KServe, the old vLLM `/generate`,
 * health and management.
 */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import { httpStatusOf, type HttpError } from '../shared/http-error.js';

const typeOf: Record<HttpError['kind'], string> = {
  validation: 'Input Validation Error',
  bad_request: 'Bad Request',
  bad_json: 'Input Validation Error',
  too_large: 'Input Validation Error',
  unauthorized: 'Unauthorized',
  not_found: 'NotFoundError',
  overloaded: 'Model is overloaded',
  unavailable: 'Service Unavailable',
  generation: 'Generation Error',
  not_supported: 'Not Implemented',
  internal: 'Incomplete Generation',
};

export function mindieErrorBody(err: HttpError): { error: string; error_type: string } {
  return { error: err.message, error_type: typeOf[err.kind] };
}

export const mindieErrorFormat: ErrorFormatter = (err) => ({
  status: httpStatusOf(err.kind, 'mindie'),
  body: mindieErrorBody(err),
});
