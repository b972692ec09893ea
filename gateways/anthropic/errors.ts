/**
 * Anthropic error bodies: `{"type":"error","error":{"type","message"}}` with Anthropic's type
 * words and statuses (400 invalid_request_error, 401 authentication_error, 404
 * not_found_error, 413 request_too_large, 529 overloaded_error, 500 api_error), the shape the
 * `anthropic` SDKs turn into their exception classes. The same body is a stream's `error` event.
 */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import { httpStatusOf, type HttpError } from '../shared/http-error.js';

const typeOf: Record<HttpError['kind'], string> = {
  validation: 'invalid_request_error',
  bad_request: 'invalid_request_error',
  bad_json: 'invalid_request_error',
  too_large: 'request_too_large',
  unauthorized: 'authentication_error',
  not_found: 'not_found_error',
  overloaded: 'overloaded_error',
  unavailable: 'overloaded_error',
  generation: 'api_error',
  not_supported: 'invalid_request_error',
  internal: 'api_error',
};

export function anthropicErrorBody(err: HttpError): {
  type: 'error';
  error: { type: string; message: string };
} {
  return { type: 'error', error: { type: typeOf[err.kind], message: err.message } };
}

export const anthropicErrorFormat: ErrorFormatter = (err) => ({
  status: httpStatusOf(err.kind, 'anthropic'),
  body: anthropicErrorBody(err),
});
