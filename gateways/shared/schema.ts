/**
 * ajv, configured once for all gateway schemas. A failed validation becomes an HttpError that
 * names the field (dotted path) and the rule, e.g. "parameters.top_p: must be < 1".
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { HttpError } from './http-error.js';

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false });

function fieldOf(e: ErrorObject): string {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  const extra = (e.params as { additionalProperty?: string }).additionalProperty;
  if (missing) path.push(missing);
  if (extra) path.push(extra);
  let out = '';
  for (const p of path) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || 'request body';
}

function ruleOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    case 'enum':
      return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return e.message ?? 'is invalid';
  }
}

export type Validator<T> = (value: unknown) => T;

/** Compiles a JSON Schema into a function that returns the value typed, or throws a 4xx HttpError. */
export function compileSchema<T>(schema: object): Validator<T> {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value: unknown): T => {
    if (validate(value)) return value as T;
    const e = validate.errors![0];
    const field = fieldOf(e);
    throw new HttpError('validation', `${field}: ${ruleOf(e)}`, field);
  };
}

/** A JSON Schema that also admits null (clients send null for "the default"). */
export const nullable = (schema: object): object => ({ anyOf: [schema, { type: 'null' }] });
