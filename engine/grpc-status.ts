/**
 * EngineError codes ⇄ gRPC status codes, in one place for both sides of the wire. The
 * offending request field travels in trailing metadata so the client can rebuild the same
 * EngineError the in-process engine would have thrown.
 */
import { Metadata, status as Status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { EngineError, type EngineErrorCode } from './errors.js';

/** Trailing-metadata key carrying EngineError.field. */
const ERROR_FIELD_KEY = 'prism-error-field';
/** Trailing-metadata key carrying EngineError.rule (the message without the field's name). */
const ERROR_RULE_KEY = 'prism-error-rule';
/** Trailing-metadata key carrying EngineError.code where one gRPC status stands for two codes. */
const ERROR_CODE_KEY = 'prism-error-code';

/** What a text metadata value may hold (gRPC: printable ASCII); any other text goes as `-bin`. */
const METADATA_TEXT = /^[\x20-\x7e]*$/;

/**
 * Sets `key` to `value`: as text when gRPC allows it, else as UTF-8 under `key-bin` (a client's
 * field names and schema keywords may be any Unicode, e.g. a property called `名前`).
 */
function setText(metadata: Metadata, key: string, value: string): void {
  if (METADATA_TEXT.test(value)) metadata.set(key, value);
  else metadata.set(`${key}-bin`, Buffer.from(value, 'utf8'));
}

function getText(metadata: Metadata | undefined, key: string): string | undefined {
  const bin = metadata?.get(`${key}-bin`)[0];
  if (Buffer.isBuffer(bin)) return bin.toString('utf8');
  const text = metadata?.get(key)[0];
  return typeof text === 'string' ? text : undefined;
}

const TO_GRPC: Record<EngineErrorCode, Status> = {
  INVALID_ARGUMENT: Status.INVALID_ARGUMENT,
  NOT_FOUND: Status.NOT_FOUND,
  RESOURCE_EXHAUSTED: Status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: Status.UNAVAILABLE,
  CANCELLED: Status.CANCELLED,
  GENERATION_FAILED: Status.INTERNAL,
  // A server fault (a failed model step): INTERNAL too, told apart by ERROR_CODE_KEY.
  INTERNAL: Status.INTERNAL,
  UNIMPLEMENTED: Status.UNIMPLEMENTED,
};

/** What the server sends for an error thrown by the engine (or by the request mapping). */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  if (err instanceof EngineError) {
    const metadata = new Metadata();
    if (err.field !== undefined) setText(metadata, ERROR_FIELD_KEY, err.field);
    if (err.rule !== undefined) setText(metadata, ERROR_RULE_KEY, err.rule);
    metadata.set(ERROR_CODE_KEY, err.code);
    return { code: TO_GRPC[err.code], details: err.message, metadata };
  }
  // Not an engine error: a bug. Report it as INTERNAL with its message, never a stack.
  const message = err instanceof Error ? err.message : String(err);
  return { code: Status.INTERNAL, details: `internal error: ${message}`, metadata: new Metadata() };
}

function engineCodeOf(code: Status): EngineErrorCode {
  switch (code) {
    case Status.INVALID_ARGUMENT:
    case Status.OUT_OF_RANGE:
      return 'INVALID_ARGUMENT';
    case Status.NOT_FOUND:
      return 'NOT_FOUND';
    case Status.RESOURCE_EXHAUSTED:
      return 'RESOURCE_EXHAUSTED';
    // The engine is unreachable, stopping, or did not answer in time: all "try later".
    case Status.UNAVAILABLE:
    case Status.DEADLINE_EXCEEDED:
      return 'UNAVAILABLE';
    case Status.CANCELLED:
      return 'CANCELLED';
    case Status.UNIMPLEMENTED:
      return 'UNIMPLEMENTED';
    default:
      return 'GENERATION_FAILED';
  }
}

/** What the client throws for a failed call. */
export function fromGrpcError(err: unknown): EngineError {
  if (err instanceof EngineError) return err;
  const e = err as Partial<ServiceError>;
  if (typeof e?.code !== 'number') {
    return new EngineError('GENERATION_FAILED', err instanceof Error ? err.message : String(err));
  }
  const field = getText(e.metadata, ERROR_FIELD_KEY);
  const rule = getText(e.metadata, ERROR_RULE_KEY);
  const sent = e.metadata?.get(ERROR_CODE_KEY)[0];
  const message = e.details || e.message || `gRPC status ${e.code}`;
  // The engine's own code wins when it agrees with the status (a proxy may have changed it).
  const code =
    typeof sent === 'string' && Object.hasOwn(TO_GRPC, sent) && TO_GRPC[sent as EngineErrorCode] === e.code
      ? (sent as EngineErrorCode)
      : engineCodeOf(e.code);
  return new EngineError(code, message, field, rule);
}
