/**
 * A chat prompt with tools, from request to prompt text and output parsing:
 *
 *  - checks what the engine API carries (tools, tool_choice, parallel_tool_calls, and that a
 *    `tool` message answers a call of an earlier assistant message) — one place for gRPC and
 *    HTTP callers alike;
 *  - renders the template: a template that renders `tools` itself gets them (and the
 *    messages as Hugging Face templates expect them, see tokenizer/chat-template.ts);
 *    one without tool support gets the built-in tool prompt (tool-prompt.ts);
 *  - says how the output is parsed (chat-output.ts): reasoning when the template knows
 *    `</think>`, tool calls when tools are offered and tool_choice is not `none`.
 */
import { invalidArgument } from '../errors.js';
import type { ChatMessage, ChatTool, ToolChoice } from '../types.js';
import type { ChatParsing } from './chat-output.js';
import { promptOpensReasoning, templateHasReasoning } from './reasoning.js';
import { templateTool, withBuiltInToolPrompt } from './tool-prompt.js';
import type { ToolParserFamily } from './types.js';

/** OpenAI's rule for function names. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface ChatToolRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[];
  readonly toolChoice?: ToolChoice;
  readonly parallelToolCalls?: boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The checks on tools and tool messages; `field` is the prompt's path ("prompt"). */
export function checkToolRequest(req: ChatToolRequest, field = 'prompt'): void {
  const tools = req.tools ?? [];
  if (!Array.isArray(tools)) throw invalidArgument(`${field}.tools`, 'must be a list of tools');
  const names = new Set<string>();
  tools.forEach((t: unknown, i) => {
    const at = `${field}.tools[${i}]`;
    if (!isObject(t)) throw invalidArgument(at, 'must be an object');
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name))
      throw invalidArgument(`${at}.name`, 'must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -');
    if (names.has(t.name)) throw invalidArgument(`${at}.name`, `'${t.name}' is used by an earlier tool`);
    names.add(t.name);
    if (t.description !== undefined && typeof t.description !== 'string')
      throw invalidArgument(`${at}.description`, 'must be a string');
    if (t.parameters !== undefined && !isObject(t.parameters))
      throw invalidArgument(`${at}.parameters`, 'must be a JSON Schema object');
  });
  const choice: unknown = req.toolChoice;
  if (choice !== undefined) {
    const named = isObject(choice) ? choice.function : undefined;
    if (!(choice === 'none' || choice === 'auto' || choice === 'required' || typeof named === 'string'))
      throw invalidArgument(`${field}.tool_choice`, "must be 'none', 'auto', 'required' or a named function");
    if (choice !== 'none' && choice !== 'auto') {
      // A forced call (the grammar in call-grammar.ts) needs something to call.
      if (tools.length === 0) throw invalidArgument(`${field}.tool_choice`, 'needs tools');
      if (typeof named === 'string' && !names.has(named))
        throw invalidArgument(`${field}.tool_choice`, `names '${named}', which is not one of the tools`);
    }
  }
  if (req.parallelToolCalls !== undefined && typeof req.parallelToolCalls !== 'boolean')
    throw invalidArgument(`${field}.parallel_tool_calls`, 'must be a boolean');
  checkToolMessages(req.messages, `${field}.messages`);
}

/** Every `tool` message answers (tool_call_id) a call made by an earlier assistant message. */
function checkToolMessages(messages: readonly ChatMessage[], field: string): void {
  const callIds = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) callIds.add(c.id);
    if (m.role !== 'tool') return;
    if (typeof m.toolCallId !== 'string' || m.toolCallId === '')
      throw invalidArgument(`${field}[${i}].tool_call_id`, 'is required on a tool message');
    if (!callIds.has(m.toolCallId))
      throw invalidArgument(
        `${field}[${i}].tool_call_id`,
        `'${m.toolCallId}' is not the id of a tool call of an earlier assistant message`,
      );
  });
}

export interface RenderedChat {
  readonly text: string;
  /** null: the output is returned as is. */
  readonly parsing: ChatParsing | null;
}

/** Renders with `render(messages, tools)`; decides the output parsing. */
export function renderToolChat(
  req: ChatToolRequest,
  template: string,
  family: ToolParserFamily,
  render: (messages: readonly ChatMessage[], tools: readonly Record<string, unknown>[] | undefined) => string,
): RenderedChat {
  const tools = req.tools ?? [];
  const active = tools.length > 0 && req.toolChoice !== 'none';
  const nativeTools = /\btools\b/.test(template);
  const nativeCalls = /\btool_calls\b/.test(template);
  const hasToolHistory = req.messages.some((m) => m.role === 'tool' || (m.toolCalls?.length ?? 0) > 0);
  let messages = req.messages;
  let templateTools: Record<string, unknown>[] | undefined;
  if (active && nativeTools) templateTools = tools.map(templateTool);
  else if (active || (hasToolHistory && !nativeCalls)) {
    messages = withBuiltInToolPrompt(req.messages, active ? tools : [], family, !nativeCalls);
  }
  const text = render(messages, templateTools);
  const reasoning = templateHasReasoning(template) ? { startsInReasoning: promptOpensReasoning(text) } : null;
  const toolParsing = active
    ? { family, toolNames: tools.map((t) => t.name), parallel: req.parallelToolCalls ?? true }
    : null;
  return { text, parsing: reasoning || toolParsing ? { reasoning, tools: toolParsing } : null };
}
