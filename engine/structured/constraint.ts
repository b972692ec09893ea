/**
 * The engine-side output constraint: what every API family's field (`response_format`,
 * `guided_*`, `structured_outputs`, TGI `grammar`) is mapped onto, and what the grammar
 * worker compiles. One request carries at most one.
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
export type Constraint =
  /** Any JSON object (OpenAI `json_object`; `json_schema` without a schema). */
  | { readonly kind: 'json_object' }
  /**
   * A JSON Schema, as JSON text. `additionalProperties` (and extra array items) default to
   * false where the schema does not say (the spec's rule; xgrammar's strict mode).
   */
  | { readonly kind: 'json_schema'; readonly schema: string }
  /** A regular expression the whole output must match (xgrammar's regex dialect). */
  | { readonly kind: 'regex'; readonly pattern: string }
  /** The output is exactly one of these strings. */
  | { readonly kind: 'choice'; readonly choices: readonly string[] }
  /** An EBNF grammar in xgrammar's (GBNF-like) notation, rule `root` first. */
  | { readonly kind: 'grammar'; readonly ebnf: string };

export type ConstraintKind = Constraint['kind'];

/** What the grammar thread compiles: a client's constraint, or one the engine derived. */
export type GrammarConstraint =
  | Constraint
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
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The cache key: kind, then the body in a form that ignores irrelevant spelling differences. */
export function canonicalText(c: GrammarConstraint): string {
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
