/**
 * Prompt → token ids: text (tokenized), token ids (checked), or chat messages (rendered with
 * the chat template, then tokenized); then `truncate` and the maxInputTokenLen rule
 * (MindIE `truncation`: 0 error, -1 keep the first tokens, 1 keep the last ones). Every
 * failure is an INVALID_ARGUMENT naming the field and the numbers.
 */
import { EngineError, invalidArgument } from './errors.js';
import type { TruncationMode } from './options.js';
import type { ChatMessage, PromptInput } from './types.js';
import type { GrammarVocab } from './tokenizer/grammar-vocab.js';
import type { ChatTemplateCallOptions } from './tokenizer/chat-template.js';

/** What the engine needs from a tokenizer (engine/tokenizer/ provides it). */
export interface EngineTokenizer {
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  /** Computed off the JS thread: a long prompt must not hold up the other streams. */
  encodeAsync(text: string, options?: { addSpecialTokens?: boolean }): Promise<number[]>;
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  tokenText(id: number): string;
  /** The model's own chat template, when it ships one. */
  readonly chatTemplate?: string | null;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateCallOptions): string;
  createDetokenizer(options?: { skipSpecialTokens?: boolean }): {
    push(id: number): string;
    flush(): string;
    readonly text: string;
  };
  /** For structured output; absent in test tokenizers, where constrained requests are refused. */
  grammarVocab?(): GrammarVocab;
  /**
   * Structured output's jump-forward (engine/structured/jump-forward.ts) tokenizes the text a
   * grammar forces on the event loop; without these it is off.
   */
  encode?(text: string, options?: { addSpecialTokens?: boolean }): number[];
  prepareEncode?(): void;
  isSpecial?(id: number): boolean;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

export function checkMessages(messages: unknown, field: string): readonly ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0)
    throw invalidArgument(field, 'must be a non-empty list of messages');
  messages.forEach((m: unknown, i) => {
    const msg = m as Partial<ChatMessage> | null;
    if (msg === null || typeof msg !== 'object') throw invalidArgument(`${field}[${i}]`, 'must be an object');
    if (typeof msg.role !== 'string' || !ROLES.has(msg.role)) {
      throw invalidArgument(
        `${field}[${i}].role`,
        `must be one of system, user, assistant, tool, got ${JSON.stringify(msg.role)}`,
      );
    }
    if (typeof msg.content !== 'string') throw invalidArgument(`${field}[${i}].content`, 'must be a string');
  });
  return messages as readonly ChatMessage[];
}

function renderChat(
  tok: EngineTokenizer,
  messages: unknown,
  addGenerationPrompt: boolean,
  template: string | undefined,
  field = 'prompt.messages',
): string {
  const checked = checkMessages(messages, field);
  try {
    return tok.applyChatTemplate(checked, {
      addGenerationPrompt,
      ...(template !== undefined ? { template } : {}),
    });
  } catch (e) {
    throw invalidArgument(field, `chat template failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function checkTokenIds(ids: unknown, vocabSize: number, field: string): number[] {
  if (!Array.isArray(ids)) throw invalidArgument(field, 'must be a list of token ids');
  ids.forEach((id: unknown, i) => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw invalidArgument(
        `${field}[${i}]`,
        `must be a token id in [0, ${vocabSize}), got ${JSON.stringify(id)}`,
      );
    }
  });
  return ids as number[];
}

async function encode(
  tok: EngineTokenizer,
  text: string,
  addSpecialTokens: boolean,
  field: string,
): Promise<number[]> {
  try {
    return await tok.encodeAsync(text, { addSpecialTokens });
  } catch (e) {
    throw invalidArgument(field, `cannot be tokenized: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export interface PromptLimits {
  readonly maxInputTokenLen: number;
  readonly truncation: TruncationMode;
}

export async function promptTokens(
  tok: EngineTokenizer,
  prompt: PromptInput,
  truncate: number | undefined,
  limits: PromptLimits,
  chatTemplate: string | undefined,
  /** Renders chat prompts instead of the plain template (chat prompts with tools: engine/tools/). */
  renderChatPrompt?: (prompt: Extract<PromptInput, { kind: 'chat' }>) => string,
): Promise<number[]> {
  if (prompt === null || typeof prompt !== 'object')
    throw invalidArgument('prompt', 'must be one of text, tokens, chat');
  let ids: number[];
  switch (prompt.kind) {
    case 'text':
      if (typeof prompt.text !== 'string') throw invalidArgument('prompt.text', 'must be a string');
      ids = await encode(tok, prompt.text, prompt.addSpecialTokens ?? true, 'prompt.text');
      break;
    case 'tokens':
      ids = [...checkTokenIds(prompt.ids, tok.vocabSize, 'prompt.ids')];
      break;
    case 'chat': {
      const text = renderChatPrompt
        ? renderChatPrompt(prompt)
        : renderChat(tok, prompt.messages, prompt.addGenerationPrompt ?? true, chatTemplate);
      // The template already wrote any BOS / special tokens it wants.
      ids = await encode(tok, text, false, 'prompt.messages');
      break;
    }
    default:
      throw invalidArgument(
        'prompt.kind',
        `must be text, tokens or chat, got ${JSON.stringify((prompt as { kind: unknown }).kind)}`,
      );
  }
  if (ids.length === 0) throw invalidArgument('prompt', 'must not be empty (0 tokens)');
  if (truncate !== undefined && ids.length > truncate) ids = ids.slice(ids.length - truncate);
  const max = limits.maxInputTokenLen;
  if (ids.length > max) {
    if (limits.truncation === 0) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `prompt: the input has ${ids.length} tokens, more than maxInputTokenLen (${max}); shorten it or set truncate`,
        'prompt',
      );
    }
    ids = limits.truncation === -1 ? ids.slice(0, max) : ids.slice(ids.length - max);
  }
  return ids;
}
