/**
 * What one choice (sequence index) of a request has produced: tokens, text, logprobs, finish
 * reason. `accept` turns one sampled token into the text it releases — incremental
 * detokenization, then stop strings (held back while they could still match) — and decides
 * whether the sequence ends (EOS, stop token, stop string, or the length limit).
 */
import type { EngineTokenizer } from './prompt.js';
import type { ResolvedParams } from './sampling-params.js';
import { StopStringMatcher } from './stop-strings.js';
import type { FinishReason, TokenLogprob } from './types.js';

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
  private readonly detok: { push(id: number): string; flush(): string };
  private readonly stopper: StopStringMatcher;

  constructor(
    readonly index: number,
    readonly seed: number,
    tokenizer: EngineTokenizer,
    private readonly params: ResolvedParams,
    private readonly eos: ReadonlySet<number>,
  ) {
    this.detok = tokenizer.createDetokenizer({ skipSpecialTokens: params.skipSpecialTokens });
    this.stopper = new StopStringMatcher(params.stop, params.includeStopStrInOutput);
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
  ): { delta: string; gapMs: number | null } {
    const gapMs = this.tokenIds.length > 0 ? now - this.lastTokenAt : null;
    if (gapMs !== null) {
      this.gapSumMs += gapMs;
      this.gaps++;
    }
    this.lastTokenAt = now;
    this.tokenIds.push(token);
    if (Number.isFinite(logprob)) this.cumulativeLogprob += logprob;

    let delta = '';
    let byStopString = false;
    if ((!this.params.ignoreEos && this.eos.has(token)) || this.params.stopTokenIds.has(token)) {
      this.reason = 'stop'; // the stop token itself adds no text
    } else {
      const r = this.stopper.push(this.detok.push(token));
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
    return { delta, gapMs };
  }
}
