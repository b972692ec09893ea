/**
 * Streaming tool calls by re-parsing: each time the text grows, the family parses the whole
 * text so far and only the difference to what was already sent goes out — content, then per
 * call a first delta (index, id, type, name) and argument fragments. Because every family's
 * prefix parse only extends (types.ts), the sent pieces add up exactly to the final parse,
 * which is also the unary result. With `parallel` false only the first call is kept.
 */
import { randomBytes } from 'node:crypto';
import type { ParseContext, ParsedOutput, ToolCall, ToolCallDelta, ToolParserFamily } from './types.js';

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function newToolCallId(): string {
  const bytes = randomBytes(24);
  let id = 'call_';
  for (const b of bytes) id += ID_CHARS[b % ID_CHARS.length];
  return id;
}

export interface StreamDelta {
  readonly content: string;
  readonly toolCalls: readonly ToolCallDelta[];
}

interface SentCall {
  readonly id: string;
  readonly name: string;
  args: string;
}

export class ToolCallStream {
  private sentContent = '';
  private readonly sent: SentCall[] = [];
  private last: ParsedOutput = { content: '', calls: [] };

  constructor(
    private readonly family: ToolParserFamily,
    private readonly context: ParseContext,
    private readonly parallel = true,
    private readonly newId: () => string = newToolCallId,
  ) {}

  /** The whole text so far (`final`: nothing more will come). */
  update(text: string, final: boolean): StreamDelta {
    const parsed = this.family.parse(text, final, this.context);
    this.last = parsed;
    let content = '';
    if (parsed.content.startsWith(this.sentContent)) {
      content = parsed.content.slice(this.sentContent.length);
      this.sentContent = parsed.content;
    }
    const toolCalls: ToolCallDelta[] = [];
    const calls = this.parallel ? parsed.calls : parsed.calls.slice(0, 1);
    calls.forEach((call, index) => {
      let sent = this.sent[index];
      if (sent === undefined) {
        sent = { id: this.newId(), name: call.name, args: '' };
        this.sent.push(sent);
        toolCalls.push({
          index,
          id: sent.id,
          type: 'function',
          function: { name: call.name, arguments: '' },
        });
      }
      if (call.arguments.length > sent.args.length && call.arguments.startsWith(sent.args)) {
        toolCalls.push({ index, function: { arguments: call.arguments.slice(sent.args.length) } });
        sent.args = call.arguments;
      }
    });
    return { content, toolCalls };
  }

  /** The parse as sent: content and complete calls (call after `update(text, true)`). */
  result(): { content: string; calls: ToolCall[] } {
    return {
      content: this.sentContent,
      calls: this.sent.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.args },
      })),
    };
  }

  /** The latest parse, unfiltered (tests). */
  get parsed(): ParsedOutput {
    return this.last;
  }
}
