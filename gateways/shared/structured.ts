/**
 * Structured output, gateway side: the one place that maps each API family's field onto the
 * engine's `Constraint` (engine/types.ts) and checks its shape, so every family refuses the
 * same bad input with a 4xx naming its own field:
 *
 *   OpenAI chat / completions  `response_format` {text | json_object | json_schema}
 *   vLLM extension fields      `structured_outputs` {json | regex | choice | grammar | json_object},
 *                              `guided_json`, `guided_regex`, `guided_choice`, `guided_grammar`
 *                              (OpenAI routes, vLLM `/generate`, MindIE `/infer`, KServe `generate`)
 *   TGI                        `parameters.grammar` {type: json | regex, value}
 *
 * At most one of them per request. A JSON Schema goes to the engine as the client sent it
 * (JSON text): the engine prepares it, once, and compiles the constraint. A refusal or a
 * compile error comes back as INVALID_ARGUMENT whose `field` is `constraint` (or a path under
 * it: `constraint.schema.properties.a`), answered about the client's field
 * (client-fields.ts).
 */
import type { Constraint, GenerateRequest } from '../../engine/api.js';
import { withClientFields } from './client-fields.js';
import { invalid } from './http-error.js';

/** OpenAI's rule for `json_schema.name`: a-z, A-Z, 0-9, underscores and dashes, at most 64. */
const SCHEMA_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A request's constraint and the client fields it came from (the engine's errors are renamed to them). */
export interface ClientConstraint {
  readonly constraint: Constraint;
  /** The client's field of the constraint (`response_format`). */
  readonly field: string;
  /** A JSON Schema's own field (`response_format.json_schema.schema`): where its refusals point. */
  readonly schemaField?: string;
}

/** Remembers the client fields of `request.constraint`, for the engine's errors; returns the request. */
export function withConstraintField(
  request: GenerateRequest,
  source: ClientConstraint | undefined,
): GenerateRequest {
  if (source === undefined) return request;
  // The engine's names: `constraint` and, for a JSON Schema, `constraint.schema` (validate.ts).
  return withClientFields(request, [
    ...(source.schemaField !== undefined ? [['constraint.schema', source.schemaField] as const] : []),
    ['constraint', source.field],
  ]);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A JSON Schema given as an object or as JSON text, carried to the engine as text (the engine
 * prepares and checks it). `strict` (OpenAI `strict: true`): refused unless the grammar alone
 * enforces it, as OpenAI refuses what its strict mode does not support; otherwise what the
 * grammar cannot enforce is checked on the finished document.
 */
export function schemaConstraint(value: unknown, field: string, strict = false): Constraint {
  let schema = value;
  if (typeof value === 'string') {
    try {
      schema = JSON.parse(value);
    } catch (e) {
      throw invalid(field, `is not JSON: ${(e as Error).message}`);
    }
  }
  return { kind: 'json_schema', schema: JSON.stringify(schema), ...(strict ? { strict: true } : {}) };
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
function fromResponseFormat(rf: unknown, field = 'response_format'): Constraint | undefined {
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
      return schemaConstraint(js.schema, `${field}.json_schema.schema`, js.strict === true);
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
      return schemaConstraint(so.json, `${field}.json`);
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
): ClientConstraint | undefined {
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
  if (rf) {
    const field = `${prefix}response_format`;
    return {
      constraint: rf,
      field,
      ...(rf.kind === 'json_schema' ? { schemaField: `${field}.json_schema.schema` } : {}),
    };
  }
  const k = vllm[0];
  if (k === undefined) return undefined;
  const field = `${prefix}${k}`;
  switch (k) {
    case 'structured_outputs': {
      const constraint = fromStructuredOutputs(body.structured_outputs, field);
      return {
        constraint,
        field,
        ...(constraint.kind === 'json_schema' ? { schemaField: `${field}.json` } : {}),
      };
    }
    case 'guided_json':
      return { constraint: schemaConstraint(body.guided_json, field), field, schemaField: field };
    case 'guided_regex':
      return { constraint: { kind: 'regex', pattern: nonEmptyString(body.guided_regex, field) }, field };
    case 'guided_choice':
      return { constraint: { kind: 'choice', choices: choiceList(body.guided_choice, field) }, field };
    case 'guided_grammar':
      return { constraint: { kind: 'grammar', ebnf: nonEmptyString(body.guided_grammar, field) }, field };
  }
}

/** TGI `parameters.grammar`: {type: 'json', value: schema} or {type: 'regex', value: pattern}. */
export function fromTgiGrammar(grammar: unknown, field = 'parameters.grammar'): ClientConstraint | undefined {
  if (grammar === undefined || grammar === null) return undefined;
  if (!isObject(grammar)) throw invalid(field, 'must be an object with type and value');
  switch (grammar.type) {
    case 'json':
      return {
        constraint: schemaConstraint(grammar.value, `${field}.value`),
        field: `${field}.value`,
        schemaField: `${field}.value`,
      };
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
