/**
 * The step-cost model the adaptive k weighs draft tokens against, learned from the engine's
 * own decode/verify steps: per bucket of batch sizes (1, 2-3, 4-7, 8-15, 16-31, … sequences),
 * a decaying least-squares line through (tokens in the step, milliseconds it took). The
 * adaptive k asks for the curve of the batch it is about to send and charges the step its
 * total tokens on that curve.
 *
 * Why learn it, and why per batch size: what one more token costs depends on the machine,
 * the model and how full the step already is. On a GPU a small step is bound by reading the
 * weights and a few more tokens are nearly free; on the 2-core development machine a 6-token
 * step of the default model costs about twice a 1-token step, and a batch of 16 sequences is
 * compute-bound already, where each draft token costs about what a sequence's own token
 * does. One line through every step of ≤ 64 tokens (the earlier model) was fitted mostly on
 * single-sequence steps, whose fixed part (reading the weights once) is large, and so
 * charged a 16-sequence verify step of 16 × (1 + k) tokens too little: grounded rewriting
 * at 16 sequences drafted and was 7% slower. A line per bucket sees only steps of its own
 * batch size, whose slope is what a draft token costs there.
 */
import { stepCost, type CostCurve, type StepCost } from './adaptive-k.js';

/** A decaying least-squares line through (tokens, ms). */
class Line {
  private w = 0;
  private sT = 0;
  private sTT = 0;
  private st = 0;
  private sTt = 0;

  constructor(private readonly decay: number) {}

  record(tokens: number, ms: number): void {
    const d = this.decay;
    this.w = this.w * d + 1;
    this.sT = this.sT * d + tokens;
    this.sTT = this.sTT * d + tokens * tokens;
    this.st = this.st * d + ms;
    this.sTt = this.sTt * d + tokens * ms;
  }

  /** The slope of the last fit with steps of different sizes. */
  private lastSlope: number | null = null;

  /**
   * ms = at + slope·(tokens - at's tokens): null while too few steps, or all of one size
   * before any slope was seen. Steps all of one size say nothing about the slope: they keep
   * the last one measured (anchored at their mean). Falling back to the prior instead, once a
   * batch size that had learned drafts do not pay had sent none for long enough that the
   * decayed sizes looked all alike, made drafts look cheap again and sent them at a loss.
   */
  fit(minSteps: number): { slope: number; meanTokens: number; meanMs: number } | null {
    if (this.w < minSteps) return null;
    const meanTokens = this.sT / this.w;
    const varT = this.sTT / this.w - meanTokens * meanTokens;
    const meanMs = this.st / this.w;
    if (!(meanMs > 0)) return null;
    if (varT < 0.25) return this.lastSlope === null ? null : { slope: this.lastSlope, meanTokens, meanMs };
    const slope = (this.sTt / this.w - meanTokens * meanMs) / varT;
    if (!Number.isFinite(slope)) return null;
    this.lastSlope = slope;
    return { slope, meanTokens, meanMs };
  }
}

/** Bucket of a batch of `seqs` sequences: ⌊log2 seqs⌋. */
export function bucketOf(seqs: number): number {
  return Math.floor(Math.log2(Math.max(1, seqs)));
}

export class StepCostEstimate {
  private readonly lines: Line[] = [];

  constructor(
    /** The curve of a bucket that has not yet timed steps of different sizes. */
    private readonly prior: StepCost,
    /** Weight kept per recorded step of a bucket (0.99: about its last hundred steps count). */
    private readonly decay = 0.99,
    /** Steps a bucket records before its line replaces the prior. */
    private readonly minSteps = 8,
  ) {}

  /** A decode/verify step of `seqs` sequences and `tokens` tokens (drafts included) took `ms`. */
  record(seqs: number, tokens: number, ms: number): void {
    if (!(seqs >= 1 && tokens >= seqs && ms > 0 && Number.isFinite(ms))) return;
    const b = bucketOf(seqs);
    (this.lines[b] ??= new Line(this.decay)).record(tokens, ms);
  }

  /**
   * The cost of a step of `seqs` sequences as a function of its tokens: the bucket's line,
   * or the prior until it has one. A slope below 0.5% of the mean step per token (noise) is
   * raised to that. A line with a negative cost at 0 tokens (steps that grew faster than in
   * proportion) becomes the proportional one through the mean: each draft token then costs
   * what a step's tokens cost on average, and no draft accepted less than always pays.
   */
  curve(seqs: number): CostCurve {
    const f = this.lines[bucketOf(seqs)]?.fit(this.minSteps);
    if (!f) return (t) => stepCost(this.prior, t);
    let slope = Math.max(f.slope, (0.005 * f.meanMs) / f.meanTokens);
    let fixed = f.meanMs - slope * f.meanTokens;
    if (fixed < 0) {
      fixed = 0;
      slope = f.meanMs / f.meanTokens;
    }
    return (t) => fixed + slope * Math.max(1, t);
  }
}
