/**
 * Folds the chunks of an OpenAI stream (chat.completion.chunk or text_completion) into one
 * answer: text, tool calls assembled from their deltas, tokens with logprobs, finish reason,
 * usage. No DOM here, so Node tests it directly.
 */
import { messageOf } from './errors.js';
import type { TokenInfo, ToolCall } from './request.js';

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export interface Answer {
  text: string;
  toolCalls: ToolCall[];
  tokens: TokenInfo[];
  finishReason: string | null;
  usage: Usage | null;
  error: string | null;
  /** Chunks that carried generated content (text, a tool-call delta or a token). */
  contentChunks: number;
}

export function emptyAnswer(): Answer {
  return {
    text: '',
    toolCalls: [],
    tokens: [],
    finishReason: null,
    usage: null,
    error: null,
    contentChunks: 0,
  };
}

interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

interface ChatLogprob {
  token: string;
  logprob: number;
  top_logprobs?: { token: string; logprob: number }[];
}

interface Choice {
  index?: number;
  delta?: { content?: string | null; tool_calls?: ToolCallDelta[] };
  message?: { content?: string | null; tool_calls?: ToolCall[] };
  text?: string;
  logprobs?:
    | { content?: ChatLogprob[] | null }
    | { tokens?: string[]; token_logprobs?: number[]; top_logprobs?: (Record<string, number> | null)[] }
    | null;
  finish_reason?: string | null;
}

function addToolCallDelta(calls: ToolCall[], d: ToolCallDelta): void {
  const i = d.index ?? calls.length;
  const call = (calls[i] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
  if (d.id) call.id = d.id;
  if (d.function?.name) call.function.name += d.function.name;
  if (d.function?.arguments) call.function.arguments += d.function.arguments;
}

function addLogprobs(tokens: TokenInfo[], lp: NonNullable<Choice['logprobs']>): number {
  if ('content' in lp && Array.isArray(lp.content)) {
    for (const t of lp.content)
      tokens.push({ token: t.token, logprob: t.logprob, top: t.top_logprobs ?? [] });
    return lp.content.length;
  }
  if ('tokens' in lp && Array.isArray(lp.tokens)) {
    lp.tokens.forEach((token, i) => {
      const top = Object.entries(lp.top_logprobs?.[i] ?? {}).map(([t, l]) => ({ token: t, logprob: l }));
      tokens.push({ token, logprob: lp.token_logprobs?.[i] ?? NaN, top });
    });
    return lp.tokens.length;
  }
  return 0;
}

/** Adds one parsed `data:` payload to the answer (choice 0 only: the playground asks for n = 1). */
export function addChunk(answer: Answer, chunk: unknown): void {
  if (chunk === null || typeof chunk !== 'object') return;
  const c = chunk as { choices?: Choice[]; usage?: Usage | null; error?: unknown };
  if (c.error !== undefined) {
    answer.error = messageOf(chunk) ?? JSON.stringify(c.error);
    return;
  }
  if (c.usage) answer.usage = c.usage;
  const choice = c.choices?.find((ch) => (ch.index ?? 0) === 0);
  if (!choice) return;
  let content = false;
  const text = choice.delta?.content ?? choice.message?.content ?? choice.text;
  if (text) {
    answer.text += text;
    content = true;
  }
  for (const d of choice.delta?.tool_calls ?? []) {
    addToolCallDelta(answer.toolCalls, d);
    content = true;
  }
  if (choice.message?.tool_calls) answer.toolCalls.push(...choice.message.tool_calls);
  if (choice.logprobs && addLogprobs(answer.tokens, choice.logprobs) > 0) content = true;
  if (choice.finish_reason) answer.finishReason = choice.finish_reason;
  if (content) answer.contentChunks++;
}
