/**
 * The check of a finished document against the client's JSON Schema, for the schemas whose
 * grammar accepts more than the schema (prepare.ts, `check`): ajv (draft 2020-12, with
 * ajv-formats), compiled once per schema. It runs on the grammar thread (grammar-worker.ts),
 * which compiles the validator beside the grammar — ajv compiles a schema to code, tens of
 * milliseconds for a large one, which must not hold up the event loop — and keeps it as long
 * as the grammar is cached.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const libraries = new Map<boolean, Ajv2020>();

/**
 * ajv, with patterns read as Unicode regular expressions (`unicode`, its default, what JSON
 * Schema means) or as ECMAScript's Annex B reads them without the `u` flag.
 */
function validatorLibrary(unicode: boolean): Ajv2020 {
  let lib = libraries.get(unicode);
  if (lib) return lib;
  // strict off: schemas from the wild carry unknown keywords and formats, which validators
  // ignore (so does the grammar); the logger off: ajv would print a warning for each.
  lib = new Ajv2020({
    strict: false,
    allErrors: false,
    logger: false,
    validateSchema: false,
    unicodeRegExp: unicode,
  });
  addFormats.default(lib);
  libraries.set(unicode, lib);
  return lib;
}

/**
 * The schema compiled as JSON Schema reads it; where ajv cannot, the nearest reading that the
 * grammar enforces too, rather than leave the schema without a check:
 * - a pattern only ECMAScript's older syntax reads (`[a-z\\_]`, `{{.+}}`: identity escapes,
 *   lone braces — common in schemas from the wild, and read so by the grammar library) is
 *   compiled without the `u` flag;
 * - a reference ajv cannot resolve because a `$id` below the root moved its base
 *   (`"$id": "/properties/x"` written by generators, then `#/definitions/...` inside) is
 *   resolved against the root, as the grammar and the preparation resolve every `#...`.
 */
export function compileValidator(schema: object): ValidateFunction {
  let lastError: unknown;
  for (const variant of [schema, withoutInnerIds(schema)])
    for (const unicode of [true, false]) {
      const lib = validatorLibrary(unicode);
      try {
        return lib.compile(variant);
      } catch (e) {
        lastError = e;
        if (
          !/Invalid regular expression|can't resolve reference|resolves to more than one schema/.test(
            String(e),
          )
        )
          throw e;
      } finally {
        // The compiled function keeps what it needs; ajv's own cache would keep every schema
        // ever seen (the grammar thread's LRU decides how long a check lives).
        lib.removeSchema();
      }
    }
  throw lastError;
}

/** A copy of `schema` without the `$id`s of its subschemas (the root's is kept). */
function withoutInnerIds(schema: object): object {
  const strip = (v: unknown, root: boolean): unknown => {
    if (Array.isArray(v)) return v.map((x) => strip(x, false));
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '$id' && !root && typeof x === 'string') continue;
      // enum/const/default/examples hold data, not schemas: copied as they are
      out[k] = ['enum', 'const', 'default', 'examples'].includes(k) ? x : strip(x, false);
    }
    return out;
  };
  return strip(schema, true) as object;
}

/** A compiled check of one schema. */
export interface DocumentCheck {
  /** Null when `text` is a JSON document valid for the schema; else why not. */
  (text: string): string | null;
}

/** Compiles the check of `schemaText` (the client's schema as JSON text); throws ajv's reason. */
export function compileDocumentCheck(schemaText: string): DocumentCheck {
  const validate = compileValidator(JSON.parse(schemaText) as object);
  return (text: string) => {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      return `not JSON: ${(e as Error).message}`;
    }
    if (validate(doc)) return null;
    const e = validate.errors?.[0];
    return e ? `${e.instancePath || '(the document)'} ${e.message ?? 'is invalid'}` : 'is invalid';
  };
}
