/**
 * One gateway-side error record. Handlers throw HttpError (or let EngineErrors through); the
 * status of a failure is decided here (one table), and each API family words its body in
 * exactly one place (openai/errors.ts, tgi/errors.ts, mindie/errors.ts for MindIE's shape,
 * anthropic/errors.ts, ollama/errors.ts).
 */
import { EngineError, type EngineErrorCode } from '../../engine/api.js';

/** What went wrong, independent of the family's wording. */
export type ErrorKind =
  | 'validation' // malformed or out-of-range request (TGI/MindIE 422, OpenAI 400)
  | 'bad_request' // MindIE's 400: a malformed split prefill/decode header (gateways/pd/)
  | 'bad_json' // the body is not JSON at all
  | 'too_large' // body longer than ServerConfig.maxRequestLength (413)
  | 'unauthorized' // missing or wrong API key (401)
  | 'not_found' // unknown model / request id / route (404)
  | 'overloaded' // the engine's queue is full (429)
  | 'unavailable' // stopping or not ready (503)
  | 'generation' // generation itself failed (424)
  | 'not_supported' // a feature this build does not have (501)
  | 'internal'; // a bug: reported as such, never used for bad input (500)

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** The request field at fault, dotted (e.g. "parameters.top_p"). */
    readonly field?: string,
  ) {
    super(message);
  }
}

const kindOfEngineCode: Record<EngineErrorCode, ErrorKind> = {
  INVALID_ARGUMENT: 'validation',
  NOT_FOUND: 'not_found',
  RESOURCE_EXHAUSTED: 'overloaded',
  UNAVAILABLE: 'unavailable',
  // A cancelled request has nobody left to answer; if one is answered, it was stopped early.
  CANCELLED: 'generation',
  GENERATION_FAILED: 'generation',
  INTERNAL: 'internal',
  UNIMPLEMENTED: 'not_supported',
};

/**
 * The HTTP status of every kind of failure: the one status table (engine codes reach it through
 * `kindOfEngineCode`). Families choose the body's words, never the status, except where
 * their own APIs differ (`dialectStatus`): a request they cannot accept is 400 in OpenAI's,
 * Anthropic's and Ollama's, 422 in TGI and MindIE.
 */
const statusOfKind: Record<ErrorKind, number> = {
  validation: 422,
  bad_request: 400,
  bad_json: 422,
  too_large: 413,
  unauthorized: 401,
  not_found: 404,
  overloaded: 429,
  unavailable: 503,
  generation: 424,
  not_supported: 501,
  internal: 500,
};

export type ErrorDialect = 'openai' | 'tgi' | 'mindie' | 'anthropic' | 'ollama';

/**
 * Where a family's own API answers another status: OpenAI, Anthropic and Ollama refuse a bad
 * request with 400; Anthropic reports an overloaded server as 529 (`overloaded_error`, which
 * its SDKs retry).
 */
const dialectStatus: Partial<Record<ErrorDialect, Partial<Record<ErrorKind, number>>>> = {
  openai: { validation: 400, bad_json: 400 },
  anthropic: { validation: 400, bad_json: 400, overloaded: 529 },
  ollama: { validation: 400, bad_json: 400 },
};

export function httpStatusOf(kind: ErrorKind, dialect: ErrorDialect): number {
  return dialectStatus[dialect]?.[kind] ?? statusOfKind[kind];
}

/** Any thrown value → HttpError. Unknown exceptions are bugs: logged, reported as `internal`. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof EngineError) return new HttpError(kindOfEngineCode[err.code], err.message, err.field);
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(
    `prism gateway: unexpected error: ${err instanceof Error ? (err.stack ?? message) : message}\n`,
  );
  return new HttpError('internal', 'internal error while handling the request');
}

export function invalid(field: string, rule: string): HttpError {
  return new HttpError('validation', `${field}: ${rule}`, field);
}

/** A request field asking for a feature this build lacks: the client's request cannot be served (4xx). */
export function notSupported(field: string, what: string): HttpError {
  return new HttpError('validation', `${field}: ${what} is not supported by this server`, field);
}
