/**
 * The one entry point of schema preparation: a client's JSON Schema in, either the schema
 * text the grammar compiles or the reason it is refused and where. Gateways (to name their
 * own field), the engine's constraint check, the grammar thread and tool-call grammars all
 * call this, never the checks and rewrites behind it:
 *
 * - limits.ts: nesting, size and work bounds (nothing a client sends recurses without bound);
 * - check.ts: valid JSON Schema, and only what the grammar enforces exactly;
 * - rewrite.ts (with branch-merge.ts, implicit.ts, pattern-length.ts): the checked schema
 *   respelled in the keywords xgrammar gets right. What each rewrite or refusal works around
 *   in the library, and the test that fails once the library no longer needs it, is listed
 *   in xgrammar-workarounds.ts.
 */
import { checkJsonSchema } from './check.js';
import { SchemaRefusal } from './refusal.js';
import { rewriteForGrammar } from './rewrite.js';

export type PreparedSchema =
  /** The schema as JSON text, spelled for the grammar library (same meaning). */
  | { readonly schema: string }
  /** Why it cannot be enforced; `field` is `field` given plus the path inside the schema. */
  | { readonly refused: string; readonly field: string };

export function prepareSchema(schema: unknown, field = 'schema'): PreparedSchema {
  try {
    checkJsonSchema(schema, field);
    return { schema: rewriteForGrammar(JSON.stringify(schema)) };
  } catch (e) {
    if (e instanceof SchemaRefusal) return { refused: e.reason, field: e.field ?? field };
    throw e;
  }
}
