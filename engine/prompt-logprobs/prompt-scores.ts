/**
 * One request's prompt logprobs as its prefill steps compute them: per prompt position p ≥ 1,
 * the logprob and rank of prompt token p under the row of position p-1, and its top
 * alternatives (native/src/prompt_scores.h scores the rows; engine/step-plan.ts names them).
 * A row computed twice (a preempted request recomputes its prompt) gives the same values.
 */
import type { EngineTokenizer } from '../prompt.js';
import type { StepOutput } from '../runner.js';
import type { PromptTokenLogprob } from '../types.js';

export class PromptScores {
  private readonly logprobs: Float32Array;
  private readonly ranks: Int32Array;
  private readonly topIds: Int32Array;
  private readonly topValues: Float32Array;

  constructor(
    private readonly prompt: readonly number[],
    /** Alternatives per position. */
    private readonly top: number,
  ) {
    this.logprobs = new Float32Array(prompt.length).fill(NaN);
    this.ranks = new Int32Array(prompt.length);
    this.topIds = new Int32Array(prompt.length * top).fill(-1);
    this.topValues = new Float32Array(prompt.length * top);
  }

  /** A step's rows `row0`.. for positions `start` .. start+numNew-1 of the prompt. */
  record(out: StepOutput, row0: number, start: number, numNew: number): void {
    const lps = out.promptLogprobs;
    const ranks = out.promptLogprobRanks;
    if (!lps || !ranks) return;
    const stride = out.promptTopLogprobsStride ?? 0;
    for (let i = 0; i < numNew; i++) {
      const at = start + i + 1; // the prompt token this row scores
      if (at >= this.prompt.length) break;
      const row = row0 + i;
      this.logprobs[at] = lps[row];
      this.ranks[at] = ranks[row];
      for (let j = 0; j < this.top && j < stride; j++) {
        this.topIds[at * this.top + j] = out.promptTopLogprobIds![row * stride + j];
        this.topValues[at * this.top + j] = out.promptTopLogprobValues![row * stride + j];
      }
    }
  }

  /** One entry per prompt token; the first has no logprob. */
  list(tok: EngineTokenizer): PromptTokenLogprob[] {
    return this.prompt.map((tokenId, p) => {
      const top: PromptTokenLogprob['top'][number][] = [];
      for (let j = 0; j < this.top; j++) {
        const id = this.topIds[p * this.top + j];
        if (id < 0) break;
        top.push({ tokenId: id, text: tok.tokenText(id), logprob: this.topValues[p * this.top + j] });
      }
      const scored = p > 0 && !Number.isNaN(this.logprobs[p]);
      return {
        tokenId,
        text: tok.tokenText(tokenId),
        logprob: scored ? this.logprobs[p] : null,
        rank: scored ? this.ranks[p] : null,
        top,
      };
    });
  }
}
