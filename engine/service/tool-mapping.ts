/**
 * The tool-calling parts of the engine API ⇄ their gRPC messages (proto fields 20–29 of
 * ChatPrompt, TokenEvent, FinishEvent): tools, tool_choice, parallel_tool_calls, the template
 * variables, parsed chat deltas and results (ApplyChatTemplateRequest carries the same fields). Kept beside mapping.ts, which calls these.
 */
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { invalidArgument } from '../errors.js';
import type { ChatDelta, ChatResult, ChatTool, PromptInput, ToolChoice } from '../types.js';

type ChatPromptInput = Extract<PromptInput, { kind: 'chat' }>;

export function chatToolsToProto(
  p: Pick<ChatPromptInput, 'tools' | 'toolChoice' | 'parallelToolCalls' | 'chatTemplateKwargs'>,
): Pick<
  pb.ChatPrompt,
  'tools' | 'toolChoice' | 'toolChoiceFunction' | 'parallelToolCalls' | 'chatTemplateKwargsJson'
> {
  const choice = p.toolChoice;
  return {
    chatTemplateKwargsJson: p.chatTemplateKwargs === undefined ? '' : JSON.stringify(p.chatTemplateKwargs),
    tools: (p.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      parametersJson: t.parameters === undefined ? '' : JSON.stringify(t.parameters),
    })),
    toolChoice: typeof choice === 'string' ? choice : undefined,
    toolChoiceFunction: typeof choice === 'object' ? choice.function : undefined,
    parallelToolCalls: p.parallelToolCalls,
  };
}

export function chatToolsFromProto(
  c: Pick<
    pb.ChatPrompt,
    'tools' | 'toolChoice' | 'toolChoiceFunction' | 'parallelToolCalls' | 'chatTemplateKwargsJson'
  >,
): Pick<ChatPromptInput, 'tools' | 'toolChoice' | 'parallelToolCalls' | 'chatTemplateKwargs'> {
  const tools = c.tools.map((t, i): ChatTool => {
    let parameters: Record<string, unknown> | undefined;
    if (t.parametersJson !== '') {
      try {
        parameters = JSON.parse(t.parametersJson) as Record<string, unknown>;
      } catch {
        throw invalidArgument(`prompt.chat.tools[${i}].parameters_json`, 'must be JSON text');
      }
    }
    return {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(parameters !== undefined ? { parameters } : {}),
    };
  });
  let toolChoice: ToolChoice | undefined;
  if (c.toolChoiceFunction !== undefined) toolChoice = { function: c.toolChoiceFunction };
  else if (c.toolChoice !== undefined) toolChoice = c.toolChoice as ToolChoice; // the engine checks the value
  let chatTemplateKwargs: Record<string, unknown> | undefined;
  if (c.chatTemplateKwargsJson !== '') {
    try {
      chatTemplateKwargs = JSON.parse(c.chatTemplateKwargsJson) as Record<string, unknown>;
    } catch {
      throw invalidArgument('prompt.chat.chat_template_kwargs_json', 'must be JSON text');
    }
  }
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(c.parallelToolCalls !== undefined ? { parallelToolCalls: c.parallelToolCalls } : {}),
    ...(chatTemplateKwargs !== undefined ? { chatTemplateKwargs } : {}),
  };
}

export function chatDeltaToProto(d: ChatDelta): pb.ChatDelta {
  return {
    content: d.content,
    reasoning: d.reasoning,
    toolCalls: d.toolCalls.map((t) => ({
      index: t.index,
      id: t.id,
      type: t.type,
      name: t.function.name,
      arguments: t.function.arguments,
    })),
  };
}

export function chatDeltaFromProto(d: pb.ChatDelta): ChatDelta {
  return {
    content: d.content,
    reasoning: d.reasoning,
    toolCalls: d.toolCalls.map((t) => ({
      index: t.index,
      ...(t.id !== undefined ? { id: t.id, type: 'function' as const } : {}),
      function: {
        ...(t.name !== undefined ? { name: t.name } : {}),
        ...(t.arguments !== undefined ? { arguments: t.arguments } : {}),
      },
    })),
  };
}

export function chatResultToProto(r: ChatResult): pb.ChatResult {
  return {
    content: r.content,
    reasoningContent: r.reasoningContent,
    toolCalls: r.toolCalls.map((c) => ({ id: c.id, type: c.type, function: { ...c.function } })),
    reasoningTokens: r.reasoningTokens,
  };
}

export function chatResultFromProto(r: pb.ChatResult): ChatResult {
  return {
    content: r.content,
    reasoningContent: r.reasoningContent,
    toolCalls: r.toolCalls.map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.function?.name ?? '', arguments: c.function?.arguments ?? '' },
    })),
    reasoningTokens: r.reasoningTokens,
  };
}
