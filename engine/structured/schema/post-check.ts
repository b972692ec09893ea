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

let ajv: Ajv2020 | null = null;

function validatorLibrary(): Ajv2020 {
  if (ajv) return ajv;
  // strict off: schemas from the wild carry unknown keywords and formats, which validators
  // ignore (so does the grammar); the logger off: ajv would print a warning for each.
  ajv = new Ajv2020({ strict: false, allErrors: false, logger: false, validateSchema: false });
  addFormats.default(ajv);
  return ajv;
}

/** A compiled check of one schema. */
export interface DocumentCheck {
  /** Null when `text` is a JSON document valid for the schema; else why not. */
  (text: string): string | null;
}

/** Compiles the check of `schemaText` (the client's schema as JSON text); throws ajv's reason. */
export function compileDocumentCheck(schemaText: string): DocumentCheck {
  const lib = validatorLibrary();
  let validate: ValidateFunction;
  try {
    validate = lib.compile(JSON.parse(schemaText) as object);
  } finally {
    // The compiled function keeps what it needs; ajv's own cache would keep every schema ever
    // seen (the grammar thread's LRU decides how long a check lives).
    lib.removeSchema();
  }
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
