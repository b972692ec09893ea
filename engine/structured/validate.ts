/**
 * The engine's check of a request's constraint, for every caller (gateways and gRPC clients
 * alike): its shape, and a JSON Schema prepared (schema/prepare.ts) — the one place a
 * request's schema is prepared; the grammar thread compiles what this returns. Errors name
 * `constraint` and the path under it; a gateway renames them to the client's field
 * (gateways/shared/structured.ts).
 */
import { invalidArgument } from '../errors.js';
import type { CheckedConstraint } from './constraint.js';
import { prepareSchema } from './schema/prepare.js';

/** Large enough for Kubernetes object schemas (up to ~2 MB of JSON). */
const MAX_TEXT = 8 << 20;

export function checkConstraint(c: unknown, field = 'constraint'): CheckedConstraint {
  if (c === null || typeof c !== 'object') throw invalidArgument(field, 'must be an object');
  const k = (c as { kind?: unknown }).kind;
  const text = (v: unknown, name: string): string => {
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT)
      throw invalidArgument(
        `${field}.${name}`,
        `must be a non-empty string of at most ${MAX_TEXT} characters`,
      );
    return v;
  };
  switch (k) {
    case 'json_object':
      return { kind: 'json_object' };
    case 'json_schema': {
      const schema = text((c as { schema?: unknown }).schema, 'schema');
      let parsed: unknown;
      try {
        parsed = JSON.parse(schema);
      } catch (e) {
        throw invalidArgument(`${field}.schema`, `is not JSON: ${(e as Error).message}`);
      }
      const strict = (c as { strict?: unknown }).strict;
      if (strict !== undefined && typeof strict !== 'boolean')
        throw invalidArgument(`${field}.strict`, 'must be a boolean');
      const prepared = prepareSchema(parsed, { field: `${field}.schema`, grammarOnly: strict === true });
      if ('refused' in prepared) throw invalidArgument(prepared.field, prepared.refused);
      return { kind: 'json_schema', schema, grammar: prepared.schema, check: prepared.check?.schema ?? null };
    }
    case 'regex':
      return { kind: 'regex', pattern: text((c as { pattern?: unknown }).pattern, 'pattern') };
    case 'choice': {
      const choices = (c as { choices?: unknown }).choices;
      if (!Array.isArray(choices) || choices.length === 0)
        throw invalidArgument(`${field}.choices`, 'must be a non-empty array of strings');
      choices.forEach((s, i) => text(s, `choices[${i}]`));
      return { kind: 'choice', choices: choices as string[] };
    }
    case 'grammar':
      return { kind: 'grammar', ebnf: text((c as { ebnf?: unknown }).ebnf, 'ebnf') };
    default:
      throw invalidArgument(
        `${field}.kind`,
        `unknown constraint kind ${JSON.stringify(k)} (json_object, json_schema, regex, choice, grammar)`,
      );
  }
}
