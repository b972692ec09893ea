/**
 * A schema refused by the preparation (check.ts and the rewrites), with where and why kept
 * apart: `prepareSchema` answers `{refused: reason, field}` from it, and callers that throw
 * keep an INVALID_ARGUMENT EngineError whose message is `field: reason`.
 */
import { EngineError } from '../../errors.js';

export class SchemaRefusal extends EngineError {
  constructor(
    field: string,
    /** The rule the schema breaks, without the field. */
    readonly reason: string,
    /** No relaxation helps (prepare.ts): refused in every mode. */
    readonly final = false,
  ) {
    super('INVALID_ARGUMENT', `${field}: ${reason}`, field, reason);
  }
}

/** The refusal of the schema at `field` (a dotted path inside the client's field). */
export function refuse(field: string, reason: string): SchemaRefusal {
  return new SchemaRefusal(field, reason);
}

/** A refusal no relaxation helps: the schema is bad, too big, or no document matches it. */
export function refuseAlways(field: string, reason: string): SchemaRefusal {
  return new SchemaRefusal(field, reason, true);
}
