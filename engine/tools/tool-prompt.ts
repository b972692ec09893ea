/**
 * The built-in tool prompt, for models whose chat template has no tool support (the default
 * SmolLM2 is one, and so are DeepSeek-V3's and the plain Llama 3 templates, which never
 * render tool definitions). The tools and the call format are described in the system
 * message, and earlier calls and tool results are written as text, so that the model's own
 * template — whatever its chat format — renders a tool conversation:
 *
 *  - hermes family (the default for ChatML models): the hermes system prompt, word for word
 *    as Qwen2.5/Qwen3 templates write it (`<tools>` … `</tools>`, `<tool_call>` JSON);
 *    results as user messages in `<tool_response>` tags, as those templates do.
 *  - other families: the same prompt with the family's own call format (call-syntax.ts).
 *
 * A template that renders `tools` itself gets them as variables instead (chat-prompt.ts).
 */
import { callSyntax } from './call-syntax.js';
import { pythonStyleJson } from './python-literal.js';
import type { ToolParserFamily } from './types.js';
import type { ChatMessage, ChatTool } from '../types.js';

/** A tool as chat templates receive it (OpenAI's shape). */
export function templateTool(tool: ChatTool): Record<string, unknown> {
  const fn: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  fn.parameters = tool.parameters ?? { type: 'object', properties: {} };
  return { type: 'function', function: fn };
}

function callFormat(family: ToolParserFamily): string | null {
  const syntax = callSyntax(family);
  if (syntax === null) return null;
  if (family.name === 'qwen3' || family.name === 'qwen2_5') {
    return (
      'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    );
  }
  const args = syntax.arguments === 'json' ? '<args-json-object>' : '(<keyword>=<value>, ...)';
  const one = syntax.prefix('<function-name>') + args + syntax.suffix;
  return `For each function call, write exactly:\n${syntax.groupBegin}${one}${syntax.groupEnd}`;
}

/** The system-prompt text that offers `tools` in the family's call format; null when the family has none. */
function toolSystemPrompt(tools: readonly ChatTool[], family: ToolParserFamily): string | null {
  const format = callFormat(family);
  if (format === null) return null;
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' +
    tools.map((t) => '\n' + pythonStyleJson(templateTool(t))).join('') +
    '\n</tools>\n\n' +
    format
  );
}

/** An earlier assistant turn's calls, written as the model would have written them. */
function callsAsText(message: ChatMessage, family: ToolParserFamily): string {
  const syntax = callSyntax(family);
  const calls = message.toolCalls ?? [];
  if (syntax === null || calls.length === 0) return message.content;
  const text = calls
    .map(
      (c) =>
        syntax.prefix(c.function.name) +
        argumentsText(c.function.arguments, syntax.arguments) +
        syntax.suffix,
    )
    .join(syntax.separator);
  const body = syntax.groupBegin + text + syntax.groupEnd;
  return message.content === '' ? body : `${message.content}\n${body}`;
}

function argumentsText(args: string, kind: 'json' | 'python-kwargs'): string {
  if (kind === 'json') return args;
  try {
    const obj = JSON.parse(args) as Record<string, unknown>;
    return `(${Object.entries(obj)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(', ')})`;
  } catch {
    return `(${args})`;
  }
}

/** A tool result as the user turn a template without tool support reads, its images kept in place. */
function toolResponseTurn(m: ChatMessage): ChatMessage {
  const [open, close] = ['<tool_response>\n', '\n</tool_response>'];
  const turn: ChatMessage = { role: 'user', content: `${open}${m.content}${close}` };
  if (!m.parts) return turn;
  return {
    ...turn,
    parts: [{ type: 'text', text: open }, ...m.parts, { type: 'text', text: close }],
  };
}

/**
 * Messages for a template without tool support: the tool prompt joined to the system message
 * (or a new one), assistant calls as text, tool results as user turns in `<tool_response>`.
 */
export function withBuiltInToolPrompt(
  messages: readonly ChatMessage[],
  tools: readonly ChatTool[],
  family: ToolParserFamily,
  rewriteHistory: boolean,
): ChatMessage[] {
  let out: ChatMessage[] = rewriteHistory
    ? messages.map((m) => {
        if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0)
          return { role: 'assistant', content: callsAsText(m, family) };
        if (m.role === 'tool') return toolResponseTurn(m);
        return m;
      })
    : [...messages];
  const prompt = tools.length > 0 ? toolSystemPrompt(tools, family) : null;
  if (prompt !== null) {
    if (out[0]?.role === 'system')
      out = [{ role: 'system', content: `${out[0].content}\n\n${prompt}` }, ...out.slice(1)];
    else out = [{ role: 'system', content: prompt }, ...out];
  }
  return out;
}
