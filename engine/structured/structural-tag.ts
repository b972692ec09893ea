/**
 * The part of xgrammar's structural-tag format (its JSON input, `docs/.../structural_tag`)
 * that Prism builds: tool calls (engine/tools/call-grammar.ts) and regex constraints. The
 * grammar addon takes the tag as JSON text; these types only keep what we write well-formed.
 */

/** `content` of a tag: text, a JSON document of a schema, a regex, or a composition. */
export type StructuralTagFormat =
  | { readonly type: 'const_string'; readonly value: string }
  | { readonly type: 'json_schema'; readonly json_schema: unknown }
  | { readonly type: 'regex'; readonly pattern: string }
  | { readonly type: 'any_text' }
  | { readonly type: 'sequence'; readonly elements: readonly StructuralTagFormat[] }
  | { readonly type: 'or'; readonly elements: readonly StructuralTagFormat[] }
  | TagFormat
  | {
      /** Free text in which each trigger starts one of `tags` (whose `begin` starts with it). */
      readonly type: 'triggered_tags';
      readonly triggers: readonly string[];
      readonly tags: readonly TagFormat[];
      readonly at_least_one?: boolean;
      readonly stop_after_first?: boolean;
    }
  | {
      /** Tags joined by a non-empty separator. */
      readonly type: 'tags_with_separator';
      readonly tags: readonly TagFormat[];
      readonly separator: string;
      readonly at_least_one?: boolean;
      readonly stop_after_first?: boolean;
    };

/** `begin`, then `content`, then `end`. */
export interface TagFormat {
  readonly type: 'tag';
  readonly begin: string;
  readonly content: StructuralTagFormat;
  readonly end: string;
}

export interface StructuralTag {
  readonly type: 'structural_tag';
  readonly format: StructuralTagFormat;
}
