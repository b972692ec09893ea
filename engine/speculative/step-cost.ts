/**
 * The step-cost model the adaptive k weighs draft tokens against, learned from the engine's
 * own steps: a decaying least-squares line through (tokens in the step, milliseconds it
 * took), over steps of up to `maxTokens` tokens (decode batches and their drafts, the range
 * where the choice is made). Its slope over the time of a one-token step is `perToken`.
 *
 * Why learn it: what one more token costs depends on the machine and the model. On a GPU a
 * small step is bound by reading the weights and a few more tokens are nearly free; on the
 * 2-core development machine a 6-token step of the default model costs about twice a
 * 1-token step (docs/speculative.md), so a draft must be accepted far more often to pay, and
 * a batch of 16 sequences is compute-bound already. A fixed guess either wastes steps on
 * drafts (the n-gram proposer on chat at 16 sequences was 5% slower) or forgoes speed-ups.
 */
import type { StepCost } from './adaptive-k.js';

export class StepCostEstimate {
  private w = 0;
  private sT = 0;
  private sTT = 0;
  private st = 0;
  private sTt = 0;

  constructor(
    private readonly prior: StepCost,
    /** Weight kept per recorded step (0.99: about the last hundred steps count). */
    private readonly decay = 0.99,
    private readonly maxTokens = 64,
    /** Steps recorded before the line replaces the prior. */
    private readonly minSteps = 8,
  ) {}

  /** A step of `tokens` tokens took `ms`. */
  record(tokens: number, ms: number): void {
    if (!(tokens >= 1 && tokens <= this.maxTokens && ms > 0 && Number.isFinite(ms))) return;
    const d = this.decay;
    this.w = this.w * d + 1;
    this.sT = this.sT * d + tokens;
    this.sTT = this.sTT * d + tokens * tokens;
    this.st = this.st * d + ms;
    this.sTt = this.sTt * d + tokens * ms;
  }

  /** The learned cost; the prior until enough steps of different sizes were seen. */
  get cost(): StepCost {
    if (this.w < this.minSteps) return this.prior;
    const mT = this.sT / this.w;
    const varT = this.sTT / this.w - mT * mT;
    // Steps all of one size say nothing about the slope.
    if (varT < 0.25) return this.prior;
    const slope = (this.sTt / this.w - mT * (this.st / this.w)) / varT;
    const one = this.st / this.w - slope * mT + slope; // the line at 1 token
    if (!(one > 0)) return this.prior;
    return { perToken: Math.min(2, Math.max(0.005, slope / one)), knee: this.prior.knee };
  }
}
