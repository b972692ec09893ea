/**
 * Typed JS errors for failures reported by the native addon. The addon marks model-file
 * problems with `code: 'PRISM_MODEL_FORMAT'` and the fields `file`, `tensor`, `reason`;
 * plan/argument problems arrive as TypeError/RangeError and pass through unchanged.
 */

/** A model file or directory that cannot be read: truncated, corrupt, or unsupported. */
export class ModelFormatError extends Error {
  override readonly name = 'ModelFormatError';
  constructor(
    message: string,
    /** The file (or model directory) the problem is in. */
    readonly file: string,
    /** The tensor concerned, when the problem is about one. */
    readonly tensor: string | undefined,
    /** What is wrong, without the file/tensor prefix. */
    readonly reason: string,
  ) {
    super(message);
  }
}

function mapError(err: unknown): unknown {
  if (err instanceof Error && (err as { code?: unknown }).code === 'PRISM_MODEL_FORMAT') {
    const e = err as Error & { file?: unknown; tensor?: unknown; reason?: unknown };
    const mapped = new ModelFormatError(
      e.message,
      typeof e.file === 'string' ? e.file : '',
      typeof e.tensor === 'string' ? e.tensor : undefined,
      typeof e.reason === 'string' ? e.reason : e.message,
    );
    return mapped;
  }
  return err;
}

/** Runs `fn`, mapping a thrown native error (or, for a Promise, its rejection) to a typed one. */
export function wrapNativeError<T>(fn: () => T): T {
  let result: T;
  try {
    result = fn();
  } catch (err) {
    throw mapError(err);
  }
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw mapError(err);
    }) as T;
  }
  return result;
}
