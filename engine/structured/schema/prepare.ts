/**
 * The one entry point of schema preparation: a client's JSON Schema in; out, the schema text
 * the grammar compiles — and whether the finished document must still be checked — or the
 * reason it is refused and where. Gateways (to name their own field), the engine's constraint
 * check, the grammar thread and tool-call grammars all call this, never the parts behind it:
 *
 * - limits.ts: nesting, size and work bounds (nothing a client sends recurses without bound);
 * - drafts.ts: a schema of drafts 4 to 2019-09 respelled in 2020-12, with the same meaning;
 * - check.ts: valid JSON Schema, and only what the grammar enforces exactly;
 * - rewrite.ts (with branch-merge.ts, implicit.ts, pattern-length.ts): the checked schema
 *   respelled in the keywords xgrammar gets right. What each rewrite or refusal works around
 *   in the library, and the test that fails once the library no longer needs it, is listed
 *   in xgrammar-workarounds.ts.
 *
 * Two modes. `grammarOnly` (OpenAI's `strict: true`): a schema is accepted only if the grammar
 * alone enforces it exactly; anything else is refused, naming the first keyword in the way.
 * Otherwise (the default) such a schema is relaxed instead: the merges and the check drop what
 * the grammar cannot enforce (`uniqueItems`, `not`, `if`/`then`/`else`, `dependencies`, a
 * `multipleOf` on numbers, keywords that conflict when merged, ...), so the grammar enforces a
 * schema that accepts more than the client's, and `check` says the finished document must be
 * validated against the client's schema (post-check.ts) — the engine then resamples a document
 * that fails, and never presents one as valid. What cannot be relaxed (invalid JSON Schema, a
 * schema no document matches, a reference cycle, the limits) is refused in both modes.
 */
import { distributeSiblings, type Loosened } from './branch-merge.js';
import { checkJsonSchema, checkMetaSchema } from './check.js';
import { forbidEmptyProperties, refuseEmptySubschemas } from './empty-values.js';
import { normalizeDraft } from './drafts.js';
import { checkSchemaSize } from './limits.js';
import { isSchemaObject } from './node.js';
import { SchemaRefusal } from './refusal.js';
import { rewriteForGrammar } from './rewrite.js';

export interface PrepareOptions {
  /** The client's field (errors name it, with the path inside the schema). */
  readonly field?: string;
  /** Refuse what the grammar alone cannot enforce (OpenAI `strict: true`). */
  readonly grammarOnly?: boolean;
}

export type PreparedSchema =
  | {
      /** The schema as JSON text, spelled for the grammar library. */
      readonly schema: string;
      /**
       * Null when the grammar enforces the client's schema exactly. Otherwise the grammar's
       * schema accepts more, and each finished document is validated against `schema` (the
       * client's, in draft 2020-12, as JSON text); `loosened` says what the grammar leaves to
       * that check.
       */
      readonly check: { readonly schema: string; readonly loosened: readonly Loosened[] } | null;
    }
  /** Why it cannot be enforced; `field` is the field given plus the path inside the schema. */
  | { readonly refused: string; readonly field: string };

export function prepareSchema(client: unknown, options: PrepareOptions | string = {}): PreparedSchema {
  const { field = 'schema', grammarOnly = false } =
    typeof options === 'string' ? { field: options } : options;
  try {
    // The limits first (what follows recurses over the schema), then one dialect (drafts.ts).
    if (isSchemaObject(client)) checkSchemaSize(client, field);
    const schema = normalizeDraft(client);
    // Valid JSON Schema, and nothing in it that no value satisfies (empty-values.ts): refused
    // here in both modes, before relaxing could leave it to a check no document passes.
    if (isSchemaObject(schema)) {
      checkMetaSchema(schema, field);
      refuseEmptySubschemas(schema, field);
    }
    try {
      checkJsonSchema(schema, field);
      return { schema: rewriteForGrammar(JSON.stringify(schema)), check: null };
    } catch (e) {
      if (grammarOnly || !(e instanceof SchemaRefusal) || !relaxable(e)) throw e;
    }
    // Relaxed: merge what is beside anyOf/oneOf and allOf first, in place on a copy, so the
    // check then walks the very nodes it may loosen (not copies of them).
    const loosened: Loosened[] = [];
    const working = structuredClone(schema) as Record<string, unknown>;
    forbidEmptyProperties(working);
    distributeSiblings(working, working, [], loosened, '', checkSchemaSize(schema, field));
    checkJsonSchema(working, field, loosened, true);
    // What the grammar compiles must pass the exact check as it stands.
    checkJsonSchema(working, field, null, true);
    const { $schema: _draft, ...body } = schema as Record<string, unknown>;
    return {
      schema: rewriteForGrammar(JSON.stringify(working)),
      check: { schema: JSON.stringify(body), loosened },
    };
  } catch (e) {
    if (e instanceof SchemaRefusal) return { refused: e.reason, field: e.field ?? field };
    throw e;
  }
}

/** Refusals that relaxing cannot help: the schema itself is bad, too big, or matches nothing. */
function relaxable(e: SchemaRefusal): boolean {
  return (
    !e.final &&
    !/^(must be a JSON Schema object|is not valid JSON Schema|is nested too deeply|is too large|is too complex)/.test(
      e.reason,
    )
  );
}
