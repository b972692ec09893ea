/**
 * Request fields of vLLM's (and llama.cpp's, TGI's) sampling and chat APIs that the engine
 * does not implement: each is accepted only at the value that leaves it off, and refused with
 * a 400 naming it otherwise — never taken and dropped. (Fields no family defines at all are
 * another matter: shared/ignored-fields.ts.)
 */
import { notSupported } from './http-error.js';

/** Field → whether a value leaves the feature off, and what the feature is, for the error. */
const OFF: Readonly<Record<string, [off: (v: unknown) => boolean, what: string]>> = {
  allowed_token_ids: [(v) => Array.isArray(v) && v.length === 0, 'allowed_token_ids'],
  logits_processors: [(v) => Array.isArray(v) && v.length === 0, 'logits processors'],
  spaces_between_special_tokens: [(v) => v === true, 'spaces_between_special_tokens false'],
  detokenize: [(v) => v === true, 'detokenize false'],
  return_tokens_as_token_ids: [(v) => v === false, 'return_tokens_as_token_ids'],
  continue_final_message: [(v) => v === false, 'continuing the final message'],
  documents: [(v) => Array.isArray(v) && v.length === 0, 'documents'],
  chat_template: [() => false, 'a chat template per request'],
  cache_salt: [() => false, 'cache_salt (per-tenant prefix-cache isolation)'],
};

/** Refuses every field of `body` in the table whose value is not its off value (null counts as absent). */
export function refuseUnserved(
  body: Record<string, unknown>,
  fields: readonly string[] = Object.keys(OFF),
): void {
  for (const field of fields) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    const [off, what] = OFF[field];
    if (!off(v)) throw notSupported(field, what);
  }
}

/** The fields the table covers (schemas list them so they are not taken for unknown ones). */
export const UNSERVED_FIELDS: readonly string[] = Object.keys(OFF);
