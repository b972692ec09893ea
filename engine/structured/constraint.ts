/**
 * What the grammar worker compiles: a client's `Constraint` (engine/types.ts) once the engine
 * has checked it, or one the engine derived.
 *
 * `canonicalText` is the compile cache's key: two constraints with the same canonical text
 * compile to the same grammar (object keys sorted, so key order in a client's schema does
 * not defeat the cache).
 *
 * `GrammarConstraint` adds the engine's own kinds, which no client sends: `structural_tag`
 * (xgrammar's structural tag format), derived from a chat request's `tool_choice` and tools by
 * engine/tools/call-grammar.ts (free text until a trigger such as `<tool_call>`, then a
 * schema-constrained call; or nothing but calls).
 */
import type { Constraint } from '../types.js';

/**
 * A json_schema constraint once the engine's check (validate.ts) has prepared its schema
 * (schema/prepare.ts): the one preparation a request's schema gets. The grammar thread
 * compiles `grammar` and validates finished documents against `check`.
 */
interface PreparedSchemaConstraint {
  readonly kind: 'json_schema';
  /** The client's schema as JSON text (the compile cache's key is its canonical form). */
  readonly schema: string;
  /** The schema as the grammar library compiles it. */
  readonly grammar: string;
  /**
   * Null when the grammar enforces the client's schema exactly. Otherwise the grammar accepts
   * more, and each finished document is validated against this schema (the client's, in draft
   * 2020-12, as JSON text).
   */
  readonly check: string | null;
}

/** A client's constraint after the engine's check: a JSON Schema is prepared, the rest as sent. */
export type CheckedConstraint = Exclude<Constraint, { kind: 'json_schema' }> | PreparedSchemaConstraint;

/** What the grammar thread compiles: a client's checked constraint, or one the engine derived. */
export type GrammarConstraint =
  | CheckedConstraint
  /**
   * An xgrammar structural tag (`{"type":"structural_tag","format":…}`) as JSON text.
   * `checks`: tools whose `parameters` the grammar enforces only in part (schema/prepare.ts):
   * each call's arguments are checked against the schema (the client's) when the choice ends.
   */
  | {
      readonly kind: 'structural_tag';
      readonly tag: string;
      readonly checks?: readonly { readonly name: string; readonly schema: string }[];
    };

/** JSON text with object keys sorted at every level. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The cache key: kind, then the body in a form that ignores irrelevant spelling differences.
 * A JSON Schema's key is its client text's (prepared or not: preparing it is deterministic).
 */
export function canonicalText(c: Constraint | GrammarConstraint): string {
  switch (c.kind) {
    case 'json_object':
      return 'json_object';
    case 'json_schema':
      return `json_schema\n${stableJson(JSON.parse(c.schema))}`;
    case 'regex':
      return `regex\n${c.pattern}`;
    case 'choice':
      return `choice\n${JSON.stringify(c.choices)}`;
    case 'grammar':
      return `grammar\n${c.ebnf}`;
    case 'structural_tag':
      // Different checks over one grammar are different constraints (the checks live by key).
      return `structural_tag\n${stableJson(JSON.parse(c.tag))}${c.checks?.length ? `\n${stableJson(c.checks)}` : ''}`;
  }
}

/** An EBNF string literal for `text` (xgrammar accepts C-style escapes). */
function ebnfString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A choice list as a grammar: `root ::= "a" | "b"`. */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfString).join(' | ')}`;
}
