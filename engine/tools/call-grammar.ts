/**
 * The grammar of a model's tool calls, built from its family's call syntax (call-syntax.ts)
 * and the tools' `parameters` schemas, as an xgrammar structural tag:
 *
 *  - `tool_choice: "required"`: the output is one or more calls of the offered tools (one
 *    when `parallel_tool_calls` is false), in the family's syntax, and nothing else;
 *  - a named function: exactly one call of that function;
 *  - `"auto"`: free text until the family's trigger (`<tool_call>` for hermes); from there
 *    the call is constrained, then the text is free again (triggered tags).
 *
 * Each call's arguments are a JSON value of the tool's schema (additionalProperties false
 * where the schema does not say, as for response_format), so every call the model writes
 * parses and validates. A reasoning model (its template knows `</think>`) may think first
 * under a forced choice: its output may start with text up to `</think>`.
 */
import type { StructuralTag, StructuralTagFormat, TagFormat } from '../structured/structural-tag.js';
import { EngineError, invalidArgument } from '../errors.js';
import type { GrammarConstraint } from '../structured/constraint.js';
import { prepareSchema } from '../structured/schema/prepare.js';
import type { ChatTool, ToolChoice } from '../types.js';
import { callSyntax, type CallSyntax } from './call-syntax.js';
import { THINK_END } from './reasoning.js';
import type { ToolParserFamily } from './types.js';

export interface ToolGrammarRequest {
  readonly tools?: readonly ChatTool[];
  readonly toolChoice?: ToolChoice;
  readonly parallelToolCalls?: boolean;
}

/** A tool without `parameters` takes no arguments: `{}`. */
const NO_PARAMETERS = { type: 'object', properties: {} };

/** Whitespace a reasoning model writes between `</think>` and its answer. */
const AFTER_THINK: StructuralTagFormat = { type: 'regex', pattern: '[ \\n]{0,2}' };

/** The tools' prepared parameters, and the checks of the calls whose grammar is not exact. */
interface PreparedTools {
  readonly schemas: Map<ChatTool, Record<string, unknown>>;
  readonly checks: { readonly name: string; readonly schema: string }[];
}

/**
 * Each tool's `parameters` prepared as a response_format schema is (schema/prepare.ts). A
 * forced call (`field` given) is prepared as response_format is: what the grammar cannot
 * enforce is checked on the call's arguments when the choice ends (`checks`), and a refusal
 * is a 4xx naming that tool's parameters. Under `auto` (no `field`) only schemas the grammar
 * enforces alone are used (null otherwise: the calls stay unconstrained, as without a grammar).
 */
function preparedParameters(tools: readonly ChatTool[], field?: (i: number) => string): PreparedTools | null {
  const schemas = new Map<ChatTool, Record<string, unknown>>();
  const checks: { name: string; schema: string }[] = [];
  for (const [i, t] of tools.entries()) {
    const p = prepareSchema(t.parameters ?? NO_PARAMETERS, {
      field: field?.(i) ?? 'parameters',
      grammarOnly: field === undefined,
    });
    if ('refused' in p) {
      if (field) throw invalidArgument(p.field, p.refused);
      return null;
    }
    schemas.set(t, JSON.parse(p.schema) as Record<string, unknown>);
    if (p.check) checks.push({ name: t.name, schema: p.check.schema });
  }
  return { schemas, checks };
}

function callTag(
  syntax: CallSyntax,
  tool: ChatTool,
  schemas: Map<ChatTool, Record<string, unknown>>,
): TagFormat {
  return {
    type: 'tag',
    begin: syntax.prefix(tool.name),
    content: { type: 'json_schema', json_schema: schemas.get(tool)! },
    end: syntax.suffix,
  };
}

function commonPrefix(texts: readonly string[]): string {
  let p = texts[0] ?? '';
  for (const t of texts) while (!t.startsWith(p)) p = p.slice(0, -1);
  return p;
}

/**
 * One or more calls (one when not `parallel`) joined by the separator, inside the group's
 * markers. xgrammar's `tags_with_separator` needs a non-empty separator and must end its
 * rule, so the markers become a tag around it; where calls are simply concatenated
 * (DeepSeek-V3.1) the calls' common opening text serves as the separator instead.
 */
function callGroup(
  syntax: CallSyntax,
  tools: readonly ChatTool[],
  parallel: boolean,
  schemas: Map<ChatTool, Record<string, unknown>>,
): StructuralTagFormat {
  let tags = tools.map((t) => callTag(syntax, t, schemas));
  let separator = syntax.separator;
  let open = syntax.groupBegin;
  let close = syntax.groupEnd;
  if (separator === '') {
    const shared = commonPrefix(tags.map((t) => t.begin));
    separator = syntax.suffix + shared;
    tags = tags.map((t) => ({ ...t, begin: t.begin.slice(shared.length), end: '' }));
    open += shared;
    close = syntax.suffix + close;
  }
  const calls: StructuralTagFormat = {
    type: 'tags_with_separator',
    tags,
    separator,
    at_least_one: true,
    stop_after_first: !parallel,
  };
  return open === '' && close === '' ? calls : { type: 'tag', begin: open, content: calls, end: close };
}

/**
 * Free text, with every call constrained once its trigger appears; null where the family's
 * calls do not begin with its trigger (GLM-4 marks a call by a bare name line).
 */
function triggeredCalls(
  syntax: CallSyntax,
  tools: readonly ChatTool[],
  parallel: boolean,
  schemas: Map<ChatTool, Record<string, unknown>>,
): StructuralTagFormat | null {
  if (syntax.groupBegin !== '') {
    // DeepSeek: the group marker is the trigger; the calls inside it are constrained.
    const group = callGroup(syntax, tools, parallel, schemas) as TagFormat;
    return {
      type: 'triggered_tags',
      triggers: [syntax.groupBegin],
      tags: [group],
      stop_after_first: !parallel,
    };
  }
  const tags = tools.map((t) => callTag(syntax, t, schemas));
  if (!tags.every((t) => t.begin.startsWith(syntax.trigger))) return null;
  return { type: 'triggered_tags', triggers: [syntax.trigger], tags, stop_after_first: !parallel };
}

function structuralTag(format: StructuralTagFormat, prepared: PreparedTools): GrammarConstraint {
  const tag: StructuralTag = { type: 'structural_tag', format };
  return {
    kind: 'structural_tag',
    tag: JSON.stringify(tag),
    ...(prepared.checks.length > 0 ? { checks: prepared.checks } : {}),
  };
}

function isForced(choice: ToolChoice | undefined): choice is 'required' | { readonly function: string } {
  return choice === 'required' || (typeof choice === 'object' && choice !== null);
}

/**
 * The grammar `req`'s tool_choice asks for; null when there is none to apply (no tools,
 * `none`, or `auto` where the family or a schema does not allow one — the calls are then
 * parsed from free text as before). A forced choice that cannot be enforced is an error:
 * 4xx for a schema the grammar cannot enforce (naming it), 501 for a family without a JSON
 * call syntax (ChatGLM2/3).
 */
export function toolCallConstraint(
  req: ToolGrammarRequest,
  family: ToolParserFamily,
  reasoning: boolean,
  field = 'prompt',
): GrammarConstraint | null {
  const tools = req.tools ?? [];
  const choice = req.toolChoice;
  if (tools.length === 0 || choice === 'none') return null;
  const parallel = req.parallelToolCalls ?? true;
  const syntax = callSyntax(family);
  if (!isForced(choice)) {
    if (syntax === null || syntax.arguments !== 'json') return null;
    // Under auto a schema the grammar cannot enforce leaves the calls unconstrained (as
    // without a grammar) rather than failing a request that worked before.
    const prepared = preparedParameters(tools);
    const format = prepared ? triggeredCalls(syntax, tools, parallel, prepared.schemas) : null;
    return format && prepared ? structuralTag(format, prepared) : null;
  }
  if (syntax === null || syntax.arguments !== 'json')
    throw new EngineError(
      'UNIMPLEMENTED',
      `${field}.tool_choice: the '${family.name}' tool-call format has no JSON call syntax to force a call with; use 'auto' or 'none'`,
      `${field}.tool_choice`,
    );
  const offered = choice === 'required' ? tools : tools.filter((t) => t.name === choice.function);
  if (offered.length === 0)
    throw invalidArgument(
      `${field}.tool_choice`,
      `names '${(choice as { function: string }).function}', which is not one of the tools`,
    );
  const prepared = preparedParameters(
    offered,
    (i) => `${field}.tools[${tools.indexOf(offered[i]!)}].parameters`,
  )!;
  const calls = callGroup(syntax, offered, choice === 'required' && parallel, prepared.schemas);
  if (!reasoning) return structuralTag(calls, prepared);
  // A reasoning model may think first (or starts inside a think block the prompt opened).
  const thought: TagFormat = { type: 'tag', begin: '', content: { type: 'any_text' }, end: THINK_END };
  return structuralTag(
    {
      type: 'or',
      elements: [calls, { type: 'sequence', elements: [thought, AFTER_THINK, calls] }],
    },
    prepared,
  );
}
