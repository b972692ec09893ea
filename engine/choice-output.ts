/**
 * What one choice (sequence index) of a request has produced: tokens, text, logprobs, finish
 * reason. `accept` turns one sampled token into the text it releases — incremental
 * detokenization, then stop strings (held back while they could still match) — and decides
 * whether the sequence ends (EOS, stop token, stop string, or the length limit).
 */
import type { EngineTokenizer } from './prompt.js';
import type { ResolvedParams } from './sampling-params.js';
import { StopStringMatcher } from './stop-strings.js';
import { mergeChatDeltas } from './tools/engine-chat.js';
import type { ChatOutputStream } from './tools/chat-output.js';
import type { ChatDelta, ChatResult, FinishReason, TokenLogprob } from './types.js';

export class ChoiceOutput {
  text = '';
  readonly tokenIds: number[] = [];
  readonly logprobs: TokenLogprob[] = [];
  cumulativeLogprob = 0;
  reason: FinishReason | null = null;
  error?: string;
  /** Time of the last token (ms) and the gaps between tokens, for inter-token latency. */
  lastTokenAt = 0;
  gapSumMs = 0;
  gaps = 0;
  /** Each gap (ms), for MindIE's `decode_time_arr`. */
  readonly gapList: number[] = [];
  private readonly detok: { push(id: number): string; flush(): string };
  private readonly stopper: StopStringMatcher;

  constructor(
    readonly index: number,
    readonly seed: number,
    private readonly tokenizer: EngineTokenizer,
    private readonly params: ResolvedParams,
    private readonly eos: ReadonlySet<number>,
    /** Parses a chat answer (tools, reasoning); null: the text is the answer. */
    private readonly chat: ChatOutputStream | null = null,
  ) {
    this.detok = tokenizer.createDetokenizer({ skipSpecialTokens: params.skipSpecialTokens });
    this.stopper = new StopStringMatcher(params.stop, params.includeStopStrInOutput);
  }

  /** The same choice with nothing produced yet: its output failed a check and is sampled again. */
  renewed(): ChoiceOutput {
    return new ChoiceOutput(
      this.index,
      this.seed,
      this.tokenizer,
      this.params,
      this.eos,
      this.chat?.fresh() ?? null,
    );
  }

  /**
   * Adds a sampled token at time `now`; `atLimit` says the sequence may not grow further.
   * Returns the text delta to stream and the gap since the previous token (null for the first).
   */
  accept(
    token: number,
    logprob: number,
    now: number,
    atLimit: boolean,
  ): { delta: string; gapMs: number | null; chat?: ChatDelta } {
    const gapMs = this.tokenIds.length > 0 ? now - this.lastTokenAt : null;
    if (gapMs !== null) {
      this.gapSumMs += gapMs;
      this.gaps++;
      this.gapList.push(gapMs);
    }
    this.lastTokenAt = now;
    this.tokenIds.push(token);
    if (Number.isFinite(logprob)) this.cumulativeLogprob += logprob;

    let delta = '';
    let byStopString = false;
    if ((!this.params.ignoreEos && this.eos.has(token)) || this.params.stopTokenIds.has(token)) {
      this.reason = 'stop'; // the stop token itself adds no text
    } else {
      // min_tokens: stop strings count once that many tokens exist (vLLM's rule).
      const piece = this.detok.push(token);
      const r =
        this.tokenIds.length >= this.params.minTokens
          ? this.stopper.push(piece)
          : { text: piece, stopped: false };
      delta = r.text;
      byStopString = r.stopped;
      if (r.stopped) this.reason = 'stop';
    }
    if (this.reason === null && atLimit) this.reason = 'length';
    if (this.reason !== null && !byStopString) {
      // The end: release what the detokenizer and the stop matcher held back (text after a
      // stop string, by contrast, is dropped).
      const tail = this.stopper.push(this.detok.flush());
      delta += tail.text;
      if (!tail.stopped) delta += this.stopper.flush();
    }
    this.text += delta;
    if (this.chat === null) return { delta, gapMs };
    let chat = this.chat.push(delta);
    if (this.reason !== null) chat = mergeChatDeltas(chat, this.chat.finish());
    // A stop after tool calls is a tool_calls finish (a length cut stays a length cut).
    if (this.reason === 'stop' && this.chat.result().toolCalls.length > 0) this.reason = 'tool_calls';
    return { delta, gapMs, chat };
  }

  /** The parsed answer (chat prompts whose output is parsed), else undefined. */
  chatResult(): ChatResult | undefined {
    return this.chat?.result();
  }
}
