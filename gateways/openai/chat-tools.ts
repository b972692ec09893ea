/**
 * Function calling and reasoning on /v1/chat/completions: the request fields (`tools`,
 * `tool_choice`, `parallel_tool_calls`) onto the engine's chat prompt, the rules MindIE sets
 * for function-call requests, and the parsed answer back (`tool_calls`, `reasoning_content`,
 * `finish_reason: "tool_calls"`, `usage.completion_tokens_details.reasoning_tokens`,
 * MindIE's `prefill_time` / `decode_time_arr`). The engine renders and parses
 * (engine/tools/); this only maps.
 */
import type { ChatDelta, ChatTool, FinishEvent, ToolChoice } from '../../engine/api.js';
import type { FieldRename } from '../shared/client-fields.js';
import { invalid } from '../shared/http-error.js';
import { nullable } from '../shared/schema.js';

export const toolSchemaProperties = {
  tools: nullable({
    type: 'array',
    maxItems: 128,
    items: {
      type: 'object',
      required: ['type', 'function'],
      properties: {
        type: { const: 'function' },
        function: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
            description: { type: 'string' },
            parameters: { type: 'object' },
            strict: nullable({ type: 'boolean' }),
          },
        },
      },
    },
  }),
  tool_choice: nullable({
    anyOf: [
      { enum: ['none', 'auto', 'required'] },
      {
        type: 'object',
        required: ['type', 'function'],
        properties: {
          type: { const: 'function' },
          function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        },
      },
    ],
  }),
  parallel_tool_calls: nullable({ type: 'boolean' }),
} as const;

export interface ToolFields {
  tools?:
    { type: 'function'; function: { name: string; description?: string; parameters?: object } }[] | null;
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } } | null;
  parallel_tool_calls?: boolean | null;
  /** MindIE lists these as unsupported with function call. */
  best_of?: unknown;
  use_beam_search?: boolean | null;
}

/** MindIE: a function-call request's JSON is at most 10 levels deep. */
const MAX_TOOL_REQUEST_DEPTH = 10;

function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1; // deep enough to fail: stop walking
  let max = 0;
  for (const v of Object.values(value)) max = Math.max(max, depthOf(v, limit - 1));
  return 1 + max;
}

/**
 * Where each tool's `parameters` sit in the client's request (`tools[i].function.parameters`
 * in chat, `tools[i].parameters` in Responses), for the engine's errors about them: the engine
 * prepares the schema of a forced call's tools (engine/tools/call-grammar.ts) and names it
 * `prompt.tools[i].parameters`.
 */
export function toolParameterFields(
  tools: readonly unknown[] | undefined,
  clientField: (i: number) => string,
): FieldRename[] {
  return (tools ?? []).map((_, i) => [`prompt.tools[${i}].parameters`, clientField(i)]);
}

/**
 * The tool fields of the engine's chat prompt; every rule about them is checked here but the
 * schemas of a forced call's tools, which the engine prepares (see toolParameterFields).
 */
export function toolPromptFields(
  body: ToolFields & { messages: { role: string; tool_calls?: unknown[] }[] },
  raw: unknown,
): { tools?: ChatTool[]; toolChoice?: ToolChoice; parallelToolCalls?: boolean } {
  const tools = body.tools ?? [];
  const usesTools =
    tools.length > 0 || body.messages.some((m) => m.role === 'tool' || (m.tool_calls?.length ?? 0) > 0);
  if (usesTools && depthOf(raw, MAX_TOOL_REQUEST_DEPTH + 1) > MAX_TOOL_REQUEST_DEPTH) {
    throw invalid(
      'request body',
      `a function-call request may nest JSON at most ${MAX_TOOL_REQUEST_DEPTH} levels deep`,
    );
  }
  const choice = body.tool_choice ?? undefined;
  // A forced call (required, named) is a grammar the engine builds from the tools.
  if (choice === 'required' || typeof choice === 'object') {
    if (tools.length === 0) throw invalid('tool_choice', 'needs tools');
    if (typeof choice === 'object' && !tools.some((t) => t.function.name === choice.function.name))
      throw invalid('tool_choice.function.name', `'${choice.function.name}' is not one of the tools`);
  }
  if (tools.length > 0 && choice !== 'none') {
    for (const field of ['best_of', 'use_beam_search'] as const) {
      const v = body[field];
      if (v !== undefined && v !== null && v !== false && v !== 1)
        throw invalid(field, 'is not supported together with tools');
    }
  }
  return {
    ...(tools.length > 0
      ? {
          tools: tools.map((t) => ({
            name: t.function.name,
            ...(t.function.description !== undefined ? { description: t.function.description } : {}),
            ...(t.function.parameters !== undefined
              ? { parameters: t.function.parameters as Record<string, unknown> }
              : {}),
          })),
        }
      : {}),
    ...(choice !== undefined
      ? { toolChoice: typeof choice === 'object' ? { function: choice.function.name } : choice }
      : {}),
    ...(body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null
      ? { parallelToolCalls: body.parallel_tool_calls }
      : {}),
  };
}

/** `choices[].message` of a finished choice: parsed when the engine parsed it, else the text. */
export function chatMessage(finish: FinishEvent): Record<string, unknown> {
  const chat = finish.chat;
  if (!chat) return { role: 'assistant', content: finish.text, tool_calls: [] };
  return {
    role: 'assistant',
    content: chat.content,
    // vLLM's older name and its current one, the same text.
    ...(chat.reasoningContent !== ''
      ? { reasoning_content: chat.reasoningContent, reasoning: chat.reasoningContent }
      : {}),
    tool_calls: chat.toolCalls.map((c) => ({ id: c.id, type: c.type, function: { ...c.function } })),
  };
}

/** `delta` of a streamed token: the parsed pieces when parsed, else the text. Null when empty. */
export function chatDelta(text: string, chat: ChatDelta | undefined): Record<string, unknown> | null {
  if (!chat) return text === '' ? null : { content: text };
  const delta: Record<string, unknown> = {};
  if (chat.reasoning !== '') {
    delta.reasoning_content = chat.reasoning;
    delta.reasoning = chat.reasoning;
  }
  if (chat.content !== '') delta.content = chat.content;
  if (chat.toolCalls.length > 0) {
    delta.tool_calls = chat.toolCalls.map((t) => ({
      index: t.index,
      ...(t.id !== undefined ? { id: t.id, type: t.type } : {}),
      function: t.function,
    }));
  }
  return Object.keys(delta).length > 0 ? delta : null;
}

/** Reasoning tokens of the finished choices (usage.completion_tokens_details). */
export function reasoningTokens(finishes: readonly FinishEvent[]): number {
  return finishes.reduce((s, f) => s + (f.chat?.reasoningTokens ?? 0), 0);
}

/** MindIE's extras of a function-call response (milliseconds), from the first choice. */
export function mindieTimings(finishes: readonly FinishEvent[]): Record<string, unknown> {
  const f = finishes[0];
  if (!f) return {};
  return { prefill_time: f.timings.prefillMs, decode_time_arr: [...(f.decodeTimesMs ?? [])] };
}

export function withReasoningTokens(usage: object, tokens: number): object {
  return { ...usage, completion_tokens_details: { reasoning_tokens: tokens } };
}
