/**
 * The engine's answer as Anthropic's: content blocks (thinking, text, tool_use), stop_reason
 * and stop_sequence, usage; and, streaming, Anthropic's event sequence — `message_start`,
 * `ping`, per block `content_block_start` / `content_block_delta` (text_delta, thinking_delta,
 * input_json_delta) / `content_block_stop`, then `message_delta` (stop_reason, usage) and
 * `message_stop`.
 */
import type { ChatDelta, FinishEvent, FinishReason, Usage } from '../../engine/api.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

/**
 * Stop sequences come back inside the text (the request asks the engine to keep them), so
 * the one that stopped the output is known; `cut` removes it from the text the client sees.
 * The engine holds back text that may begin a stop sequence, so a stop sequence appears only
 * in the last text of a choice, whole.
 */
export class StopSequences {
  private found: string | null = null;
  private seen = '';
  constructor(private readonly stops: readonly string[]) {}

  /** Text before the stop sequence (all of it while none appeared). */
  cut(text: string): string {
    if (this.stops.length === 0 || this.found !== null) return this.found !== null ? '' : text;
    const before = this.seen.length;
    this.seen += text;
    let at = -1;
    for (const s of this.stops) {
      const i = this.seen.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        this.found = s;
      }
    }
    return at < 0 ? text : this.seen.slice(before, Math.max(before, at));
  }

  get matched(): string | null {
    return this.found;
  }
}

export function stopReason(reason: FinishReason, stopSequence: string | null): StopReason {
  if (reason === 'length') return 'max_tokens';
  if (reason === 'tool_calls') return 'tool_use';
  return stopSequence !== null ? 'stop_sequence' : 'end_turn';
}

/** Anthropic counts cache reads apart from input tokens: the prefix cache's tokens are reads. */
export function anthropicUsage(u: Usage): Record<string, number> {
  return {
    input_tokens: u.promptTokens - u.cachedPromptTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: u.cachedPromptTokens,
    output_tokens: u.completionTokens,
  };
}

/** A call's arguments as the object tool_use carries (arguments cut by max_tokens: what parsed, else {}). */
function toolInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // incomplete arguments: the answer stopped inside the call
  }
  return {};
}

/** The content blocks of a finished answer; `showThinking` false (display "omitted") empties thinking blocks. */
export function contentBlocks(
  finish: FinishEvent,
  stops: StopSequences,
  showThinking: boolean,
): Record<string, unknown>[] {
  const chat = finish.chat;
  const blocks: Record<string, unknown>[] = [];
  if (chat?.reasoningContent)
    blocks.push({ type: 'thinking', thinking: showThinking ? chat.reasoningContent : '', signature: '' });
  const text = stops.cut(chat ? chat.content : finish.text);
  if (text !== '') blocks.push({ type: 'text', text });
  for (const c of chat?.toolCalls ?? [])
    blocks.push({
      type: 'tool_use',
      id: c.id,
      name: c.function.name,
      input: toolInput(c.function.arguments),
    });
  return blocks;
}

type Emit = (event: string, data: Record<string, unknown>) => void;

/** The content-block events of one streamed answer: opens, fills and closes blocks in order. */
export class BlockStream {
  private index = -1;
  private open: 'text' | 'thinking' | 'tool_use' | null = null;
  /** Engine tool-call index → its block index. */
  private readonly toolBlocks = new Map<number, number>();

  constructor(
    private readonly emit: Emit,
    private readonly stops: StopSequences,
    private readonly showThinking: boolean,
  ) {}

  private start(type: 'text' | 'thinking' | 'tool_use', block: Record<string, unknown>): void {
    this.close();
    this.index++;
    this.open = type;
    this.emit('content_block_start', {
      type: 'content_block_start',
      index: this.index,
      content_block: block,
    });
  }

  close(): void {
    if (this.open === null) return;
    if (this.open === 'thinking') this.delta({ type: 'signature_delta', signature: '' }); // no signature: nothing here signs
    this.emit('content_block_stop', { type: 'content_block_stop', index: this.index });
    this.open = null;
  }

  private delta(delta: Record<string, unknown>, index = this.index): void {
    this.emit('content_block_delta', { type: 'content_block_delta', index, delta });
  }

  private text(text: string): void {
    const cut = this.stops.cut(text);
    if (cut === '') return;
    if (this.open !== 'text') this.start('text', { type: 'text', text: '' });
    this.delta({ type: 'text_delta', text: cut });
  }

  /** One token event: its raw text, or its parsed pieces when the engine parses the output. */
  push(text: string, chat: ChatDelta | undefined): void {
    if (!chat) return this.text(text);
    if (chat.reasoning !== '') {
      if (this.open !== 'thinking') this.start('thinking', { type: 'thinking', thinking: '', signature: '' });
      if (this.showThinking) this.delta({ type: 'thinking_delta', thinking: chat.reasoning });
    }
    if (chat.content !== '') this.text(chat.content);
    for (const t of chat.toolCalls) {
      if (t.id !== undefined) {
        this.start('tool_use', { type: 'tool_use', id: t.id, name: t.function.name ?? '', input: {} });
        this.toolBlocks.set(t.index, this.index);
      }
      const at = this.toolBlocks.get(t.index);
      if (at !== undefined && t.function.arguments)
        this.delta({ type: 'input_json_delta', partial_json: t.function.arguments }, at);
    }
  }
}
