/**
 * Structured output, gateway side: the one place that maps each API family's field onto the
 * engine's `Constraint` (engine/structured/constraint.ts) and checks it, so every family
 * refuses the same bad input with a 4xx naming its own field:
 *
 *   OpenAI chat / completions  `response_format` {text | json_object | json_schema}
 *   vLLM extension fields      `structured_outputs` {json | regex | choice | grammar | json_object},
 *                              `guided_json`, `guided_regex`, `guided_choice`, `guided_grammar`
 *                              (OpenAI routes, vLLM `/generate`, native `/infer`, KServe `generate`)
 *   TGI                        `parameters.grammar` {type: json | regex, value}
 *
 * At most one of them per request. A JSON Schema is prepared here (engine/structured/schema/
 * prepare.ts, the engine's one entry point) so a refusal names the client's field; the engine
 * compiles the constraint, and a compile error comes back as INVALID_ARGUMENT whose `field` is
 * `constraint` (or a path under it), which `renameConstraintError` turns into the client's.
 */
import { EngineError } from '../../engine/errors.js';
import type { Constraint } from '../../engine/structured/constraint.js';
import { prepareSchema } from '../../engine/structured/schema/prepare.js';
import type { GenerateRequest } from '../../engine/types.js';
import { HttpError, invalid, toHttpError } from './http-error.js';

/** OpenAI's rule for `json_schema.name`: a-z, A-Z, 0-9, underscores and dashes, at most 64. */
const SCHEMA_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Which client field each constrained request's constraint came from. */
const fieldOf = new WeakMap<GenerateRequest, string>();

/** Remembers the client field of `request.constraint`, for error messages; returns the request. */
export function withConstraintField(request: GenerateRequest, field: string | undefined): GenerateRequest {
  if (field !== undefined) fieldOf.set(request, field);
  return request;
}

/** The engine's name for a request's constraint, the root of the fields its errors carry. */
const ENGINE_FIELD = 'constraint';

/**
 * Turns the engine's INVALID_ARGUMENT about its field `constraint` (or a path under it) into
 * one about the client's field; other errors pass. Decided by the error's code and field,
 * never by its text.
 */
export function renameConstraintError(request: GenerateRequest, err: unknown): unknown {
  const field = fieldOf.get(request);
  if (field === undefined || !(err instanceof EngineError) || err.code !== 'INVALID_ARGUMENT') return err;
  const at = err.field;
  if (at === undefined || !(at === ENGINE_FIELD || at.startsWith(`${ENGINE_FIELD}.`))) return err;
  const renamed = field + at.slice(ENGINE_FIELD.length);
  return new HttpError(toHttpError(err).kind, `${renamed}: ${err.rule ?? err.message}`, renamed);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A JSON Schema given as an object or as JSON text: prepared, then carried as text.
 * `grammarOnly` (OpenAI `strict: true`): refused unless the grammar alone enforces it, as
 * OpenAI refuses what its strict mode does not support; otherwise what the grammar cannot
 * enforce is checked on the finished document (engine/structured/schema/prepare.ts).
 */
export function jsonSchemaConstraint(value: unknown, field: string, grammarOnly = false): Constraint {
  let schema = value;
  if (typeof value === 'string') {
    try {
      schema = JSON.parse(value);
    } catch (e) {
      throw invalid(field, `is not JSON: ${(e as Error).message}`);
    }
  }
  const prepared = prepareSchema(schema, { field, grammarOnly });
  if ('refused' in prepared) throw invalid(prepared.field, prepared.refused);
  return { kind: 'json_schema', schema: JSON.stringify(schema) };
}

function nonEmptyString(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(field, 'must be a non-empty string');
  return value;
}

function choiceList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length === 0)
    throw invalid(field, 'must be a non-empty array of strings');
  value.forEach((s, i) => nonEmptyString(s, `${field}[${i}]`));
  return value as string[];
}

/** OpenAI `response_format`: undefined for text (no constraint). */
export function fromResponseFormat(rf: unknown, field = 'response_format'): Constraint | undefined {
  if (rf === undefined || rf === null) return undefined;
  if (!isObject(rf)) throw invalid(field, 'must be an object');
  switch (rf.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { kind: 'json_object' };
    case 'json_schema': {
      const js = rf.json_schema;
      if (!isObject(js)) throw invalid(`${field}.json_schema`, "is required when type is 'json_schema'");
      if (typeof js.name !== 'string' || js.name.length === 0)
        throw invalid(`${field}.json_schema.name`, 'is required and must be a non-empty string');
      if (!SCHEMA_NAME.test(js.name))
        throw invalid(
          `${field}.json_schema.name`,
          'must be an identifier: letters, digits, underscores and dashes, at most 64 characters',
        );
      if (js.strict !== undefined && js.strict !== null && typeof js.strict !== 'boolean')
        throw invalid(`${field}.json_schema.strict`, 'must be a boolean');
      if (js.schema === undefined || js.schema === null) return { kind: 'json_object' };
      if (!isObject(js.schema)) throw invalid(`${field}.json_schema.schema`, 'must be a JSON Schema object');
      return jsonSchemaConstraint(js.schema, `${field}.json_schema.schema`, js.strict === true);
    }
    default:
      throw invalid(
        `${field}.type`,
        `unknown type ${JSON.stringify(rf.type)}: must be one of 'text', 'json_object', 'json_schema'`,
      );
  }
}

/** vLLM's `structured_outputs` object. */
function fromStructuredOutputs(so: unknown, field: string): Constraint {
  if (!isObject(so)) throw invalid(field, 'must be an object');
  const given = Object.keys(so).filter((k) => so[k] !== undefined && so[k] !== null && so[k] !== false);
  const kinds = given.filter((k) => ['json', 'regex', 'choice', 'grammar', 'json_object'].includes(k));
  const other = given.filter((k) => !kinds.includes(k));
  if (other.length > 0)
    throw invalid(
      `${field}.${other[0]}`,
      'is not supported (supported: json, regex, choice, grammar, json_object)',
    );
  if (kinds.length !== 1)
    throw invalid(field, 'must set exactly one of json, regex, choice, grammar, json_object');
  const k = kinds[0];
  switch (k) {
    case 'json':
      return jsonSchemaConstraint(so.json, `${field}.json`);
    case 'regex':
      return { kind: 'regex', pattern: nonEmptyString(so.regex, `${field}.regex`) };
    case 'choice':
      return { kind: 'choice', choices: choiceList(so.choice, `${field}.choice`) };
    case 'grammar':
      return { kind: 'grammar', ebnf: nonEmptyString(so.grammar, `${field}.grammar`) };
    default:
      if (so.json_object !== true) throw invalid(`${field}.json_object`, 'must be true');
      return { kind: 'json_object' };
  }
}

/** The request fields (top level of the body, or `parameters` for native/KServe) that carry a constraint. */
export interface ConstraintFields {
  readonly response_format?: unknown;
  readonly structured_outputs?: unknown;
  readonly guided_json?: unknown;
  readonly guided_regex?: unknown;
  readonly guided_choice?: unknown;
  readonly guided_grammar?: unknown;
}

const VLLM_FIELDS = [
  'structured_outputs',
  'guided_json',
  'guided_regex',
  'guided_choice',
  'guided_grammar',
] as const;

/**
 * The constraint of a request in the OpenAI/vLLM families: `response_format` (when
 * `allowResponseFormat`) or one of vLLM's fields; `prefix` is how the fields' parent is named
 * in errors (e.g. "parameters."). Returns the constraint and the field it came from.
 */
export function constraintFromFields(
  body: ConstraintFields,
  options: { allowResponseFormat: boolean; prefix?: string },
): { constraint: Constraint; field: string } | undefined {
  const prefix = options.prefix ?? '';
  const present = (k: keyof ConstraintFields) => body[k] !== undefined && body[k] !== null;
  const rf = options.allowResponseFormat
    ? fromResponseFormat(body.response_format, `${prefix}response_format`)
    : undefined;
  const vllm = VLLM_FIELDS.filter(present);
  const sources = [...(rf ? ['response_format'] : []), ...vllm];
  if (sources.length > 1)
    throw invalid(
      `${prefix}${sources[1]}`,
      `cannot be combined with ${prefix}${sources[0]}: give one constraint`,
    );
  if (rf) return { constraint: rf, field: `${prefix}response_format` };
  const k = vllm[0];
  if (k === undefined) return undefined;
  const field = `${prefix}${k}`;
  switch (k) {
    case 'structured_outputs':
      return { constraint: fromStructuredOutputs(body.structured_outputs, field), field };
    case 'guided_json':
      return { constraint: jsonSchemaConstraint(body.guided_json, field), field };
    case 'guided_regex':
      return { constraint: { kind: 'regex', pattern: nonEmptyString(body.guided_regex, field) }, field };
    case 'guided_choice':
      return { constraint: { kind: 'choice', choices: choiceList(body.guided_choice, field) }, field };
    case 'guided_grammar':
      return { constraint: { kind: 'grammar', ebnf: nonEmptyString(body.guided_grammar, field) }, field };
  }
}

/** TGI `parameters.grammar`: {type: 'json', value: schema} or {type: 'regex', value: pattern}. */
export function fromTgiGrammar(
  grammar: unknown,
  field = 'parameters.grammar',
): { constraint: Constraint; field: string } | undefined {
  if (grammar === undefined || grammar === null) return undefined;
  if (!isObject(grammar)) throw invalid(field, 'must be an object with type and value');
  switch (grammar.type) {
    case 'json':
      return { constraint: jsonSchemaConstraint(grammar.value, `${field}.value`), field: `${field}.value` };
    case 'regex':
      return {
        constraint: { kind: 'regex', pattern: nonEmptyString(grammar.value, `${field}.value`) },
        field: `${field}.value`,
      };
    default:
      throw invalid(
        `${field}.type`,
        `unknown type ${JSON.stringify(grammar.type)}: must be 'json' or 'regex'`,
      );
  }
}
