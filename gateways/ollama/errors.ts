/** Ollama error bodies: `{"error": "..."}` (what the `ollama` clients raise as ResponseError). */
import type { ErrorFormatter } from '../shared/error-boundary.js';
import { httpStatusOf, type HttpError } from '../shared/http-error.js';

export function ollamaErrorBody(err: HttpError): { error: string } {
  return { error: err.message };
}

export const ollamaErrorFormat: ErrorFormatter = (err) => ({
  status: httpStatusOf(err.kind, 'ollama'),
  body: ollamaErrorBody(err),
});
