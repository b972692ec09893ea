/**
 * One choice's chat output as the client sees it: reasoning (reasoning.ts) split off first,
 * then tool calls parsed from the answer (stream.ts) when the request has tools, else the
 * answer as content verbatim. Fed the detokenized text one token at a time, it returns what
 * is new (content, reasoning, tool-call deltas) and, at the end, the whole result — which is
 * exactly the sum of what was returned, so a streamed and a unary response agree.
 */
import { splitReasoning } from './reasoning.js';
import { ToolCallStream } from './stream.js';
import type { ChatDelta, ChatResult } from '../types.js';
import type { ToolParserFamily } from './types.js';

export interface ChatParsing {
  /** null: the model does not reason (or the request turned it off). */
  readonly reasoning: { readonly startsInReasoning: boolean } | null;
  /** null: no tool parsing (no tools, or tool_choice none). */
  readonly tools: {
    readonly family: ToolParserFamily;
    readonly toolNames: readonly string[];
    readonly parallel: boolean;
  } | null;
}

export class ChatOutputStream {
  private text = '';
  private sentReasoning = '';
  private sentContent = '';
  private readonly tools: ToolCallStream | null;
  private reasoningTokens = 0;
  private undecidedTokens = 0;
  private reasoningClosed: boolean;

  constructor(private readonly parsing: ChatParsing) {
    const t = parsing.tools;
    this.tools = t ? new ToolCallStream(t.family, { toolNames: t.toolNames }, t.parallel) : null;
    this.reasoningClosed = parsing.reasoning === null;
  }

  /** A stream of the same parsing that has seen nothing yet (a choice sampled again). */
  fresh(): ChatOutputStream {
    return new ChatOutputStream(this.parsing);
  }

  /** The text of one more token ('' while the detokenizer holds bytes back). */
  push(delta: string): ChatDelta {
    this.text += delta;
    return this.update(false, true);
  }

  /** The end of the output: releases whatever was held back. */
  finish(): ChatDelta {
    return this.update(true, false);
  }

  private update(final: boolean, countToken: boolean): ChatDelta {
    let answer = this.text;
    let reasoning = '';
    const r = this.parsing.reasoning;
    if (r !== null) {
      const split = splitReasoning(this.text, final, r.startsInReasoning);
      if (countToken && !this.reasoningClosed) {
        // Tokens before we know whether a think block opens count only if one does.
        if (split.opened) {
          this.reasoningTokens += this.undecidedTokens + 1;
          this.undecidedTokens = 0;
        } else if (!split.closed) this.undecidedTokens++;
      }
      this.reasoningClosed = split.closed;
      reasoning = split.reasoning;
      answer = split.rest;
    }
    let reasoningDelta = '';
    if (reasoning.startsWith(this.sentReasoning)) {
      reasoningDelta = reasoning.slice(this.sentReasoning.length);
      this.sentReasoning = reasoning;
    }
    if (this.tools !== null) {
      const d = this.tools.update(answer, final);
      return { content: d.content, reasoning: reasoningDelta, toolCalls: d.toolCalls };
    }
    let content = '';
    if (answer.startsWith(this.sentContent)) {
      content = answer.slice(this.sentContent.length);
      this.sentContent = answer;
    }
    return { content, reasoning: reasoningDelta, toolCalls: [] };
  }

  result(): ChatResult {
    const tools = this.tools?.result();
    return {
      content: tools ? tools.content : this.sentContent,
      reasoningContent: this.sentReasoning,
      toolCalls: tools ? tools.calls : [],
      reasoningTokens: this.reasoningTokens,
    };
  }
}
