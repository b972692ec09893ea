/**
 * The engine names a request's fields by its own record (`constraint.schema.properties.a`,
 * `prompt.tools[2].parameters.minimum`); a gateway knows which client field each part came
 * from (`response_format.json_schema.schema`, `tools[2].function.parameters`). Each request
 * carries its renames here, and an INVALID_ARGUMENT from the engine is answered about the
 * client's field. Decided by the error's code and field, never by its text.
 */
import { EngineError, type GenerateRequest } from '../../engine/api.js';
import { HttpError, toHttpError } from './http-error.js';

/** An engine field (a whole path: `constraint`, `constraint.schema`) and the client field it came from. */
export type FieldRename = readonly [engine: string, client: string];

const renamesOf = new WeakMap<GenerateRequest, FieldRename[]>();

/** Adds renames to `request` (the first whose engine field covers an error's field wins); returns it. */
export function withClientFields(request: GenerateRequest, renames: readonly FieldRename[]): GenerateRequest {
  if (renames.length === 0) return request;
  const list = renamesOf.get(request) ?? [];
  list.push(...renames);
  renamesOf.set(request, list);
  return request;
}

/** `at` with its root `from` (a whole path segment) replaced by `to`; null when `at` is not under `from`. */
function underField(at: string, from: string, to: string): string | null {
  if (at !== from && !at.startsWith(`${from}.`) && !at.startsWith(`${from}[`)) return null;
  return to + at.slice(from.length);
}

/** The engine's INVALID_ARGUMENT about a renamed field, as one about the client's; other errors pass. */
export function renameEngineError(request: GenerateRequest, err: unknown): unknown {
  const renames = renamesOf.get(request);
  if (renames === undefined || !(err instanceof EngineError) || err.code !== 'INVALID_ARGUMENT') return err;
  const at = err.field;
  if (at === undefined) return err;
  for (const [from, to] of renames) {
    const renamed = underField(at, from, to);
    if (renamed !== null)
      return new HttpError(toHttpError(err).kind, `${renamed}: ${err.rule ?? err.message}`, renamed);
  }
  return err;
}
