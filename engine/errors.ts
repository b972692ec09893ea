/**
 * The engine's one error taxonomy (TGI-router style). Every failure the engine reports is
 * an EngineError with one of these codes; the gRPC service maps codes to gRPC status codes
 * (engine/grpc-status.ts), the gateways map them to HTTP statuses in one table
 * (gateways/shared/http-error.ts), and each API family words its own error body.
 */
export type EngineErrorCode =
  /** The request is malformed or out of range (gRPC INVALID_ARGUMENT, HTTP 422/400). */
  | 'INVALID_ARGUMENT'
  /** Unknown model, adapter or request id (gRPC NOT_FOUND, HTTP 404). */
  | 'NOT_FOUND'
  /** The waiting queue is full (gRPC RESOURCE_EXHAUSTED, HTTP 429). */
  | 'RESOURCE_EXHAUSTED'
  /** The engine is stopping or not ready (gRPC UNAVAILABLE, HTTP 503). */
  | 'UNAVAILABLE'
  /** The request was cancelled (gRPC CANCELLED). */
  | 'CANCELLED'
  /** Generation itself failed (gRPC INTERNAL, HTTP 424). */
  | 'GENERATION_FAILED'
  /** The server failed, not the request: e.g. a model step threw (gRPC INTERNAL, HTTP 500). */
  | 'INTERNAL'
  /** A feature the request asks for is not built yet (gRPC UNIMPLEMENTED, HTTP 501). */
  | 'UNIMPLEMENTED';

export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /** The request field the error is about, dotted path (e.g. "params.top_p"), when there is one. */
    readonly field?: string,
    /** The rule the field broke, without the field's name (the message is `${field}: ${rule}`). */
    readonly rule?: string,
  ) {
    super(message);
  }
}

export function invalidArgument(field: string, rule: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', `${field}: ${rule}`, field, rule);
}

/** Any failure as the engine reports it: an EngineError as is, anything else GENERATION_FAILED with its message. */
export function asEngineError(e: unknown): EngineError {
  return e instanceof EngineError
    ? e
    : new EngineError('GENERATION_FAILED', `request failed: ${e instanceof Error ? e.message : String(e)}`);
}
