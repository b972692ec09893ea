/**
 * The adaptive k: how many draft tokens each sequence gets in a step. Two inputs:
 *
 *  - each sequence's acceptance α, the chance that one more draft token is accepted given the
 *    previous one was (accepted draft tokens ÷ (accepted + rejections), a decaying average
 *    over its recent verify steps). With k drafts, a verify step yields 1 + α + … + α^k
 *    tokens on average, so the j-th draft token is worth α^j;
 *  - the step's cost as a function of its token count, c(T): flat while the step is bound by
 *    reading the weights (a verify token costs a little: its attention, its logits row,
 *    its sampling), linear once it is bound by compute (`StepCost`, the prior), or the
 *    curve the engine measured for steps of the batch's size (step-cost.ts).
 *
 * Draft tokens are handed out in order of worth across the whole batch, each only while it
 * raises the step's expected tokens per unit of cost. So a sequence whose drafts are rarely
 * accepted stops proposing (its first draft token is worth less than it costs), and a batch
 * that is already compute-bound gets fewer drafts (each costs a whole token there), which
 * is what vLLM's n-gram results at high load call for (anchors.md §8).
 *
 * That rule (`allocateDrafts`) counts every token alike, wherever it lands: right while
 * requests queue, where a sequence that finishes early hands its slot to a waiting one. With
 * no queue the batch is all the work there is, and it ends with its slowest sequence: drafts
 * for the sequences that copy their input make every step longer for those that cannot
 * draft (open-ended text, a prompt still in prefill), and finishing the copies early leaves
 * later steps hardly cheaper (on the development CPU a plain step of 8 sequences cost ~90%
 * of one of 16). Grounded rewriting at 16 sequences (two of four prompts paraphrased, so no
 * proposal) drafted at 74-85% acceptance and ran 2% slower. `allocatePacedDrafts` is the
 * rule for that case: drafts pay only by raising the pace of the whole batch.
 */

/** Relative cost of a step of T tokens: c(T) = 1 + perToken·(T-1) up to `knee`, then linear. */
export interface StepCost {
  /** Extra cost of one more token while the step is bound by reading the weights (× a 1-token step). */
  readonly perToken: number;
  /** Tokens per step past which it is bound by compute (each token then costs c(knee)/knee). */
  readonly knee: number;
}

/**
 * The prior, until the engine has timed its own steps (step-cost.ts learns the line): a
 * middle between a GPU, where a few more tokens in a small step are nearly free, and the
 * 2-core development machine, where each one costs about a fifth of a 1-token step of the
 * default model (docs/speculative.md). Past `knee` tokens a step grows in proportion.
 */
export const DEFAULT_STEP_COST: StepCost = { perToken: 0.1, knee: 48 };

export function stepCost(c: StepCost, tokens: number): number {
  const flat = (t: number) => 1 + c.perToken * (t - 1);
  if (tokens <= c.knee) return flat(Math.max(1, tokens));
  return flat(c.knee) * (tokens / c.knee);
}

/** One sequence's acceptance record. */
export class Acceptance {
  /** Decaying sums of accepted draft tokens and of rejections (a draft token refused). */
  private accepted: number;
  private rejected: number;
  private n = 0;

  constructor(
    prior: number,
    private readonly decay = 0.8,
  ) {
    // A prior worth one verify step: a new sequence starts proposing, and two refusals in
    // a row are enough to stop it (at the default prior and floor).
    this.accepted = prior;
    this.rejected = 1 - prior;
  }

  /** Chance that one more draft token is accepted. */
  get alpha(): number {
    const n = this.accepted + this.rejected;
    return n > 0 ? this.accepted / n : 0;
  }

  /** Verify steps (and shadow scores) recorded: 0 while only the prior speaks. */
  get records(): number {
    return this.n;
  }

  /** A verify step of `drafted` tokens accepted `accepted` of them. */
  record(drafted: number, accepted: number): void {
    if (drafted <= 0) return;
    this.n++;
    this.accepted = this.accepted * this.decay + accepted;
    this.rejected = this.rejected * this.decay + (accepted < drafted ? 1 : 0);
  }
}

/** c(T) in any unit (only ratios are compared); step-cost.ts learns one per batch size. */
export type CostCurve = (tokens: number) => number;

/** A step's cost as a function of its tokens, from either form the allocators take. */
function costCurve(cost: StepCost | CostCurve): CostCurve {
  return typeof cost === 'function' ? cost : (t: number) => stepCost(cost, t);
}

/**
 * What a draft token costs besides its place in the step (its proposal, the plan's longer
 * rows, the block trim after a refusal) and the acceptance estimate's error, as a share of
 * its worth. At 16 sequences on the development CPU a verify token costs 0.9 of a
 * sequence's own token (docs/speculative.md), so drafts accepted 90% of the time only break
 * even there; without a margin they were sent and the batch ran 7% slower.
 */
const DRAFT_MARGIN = 0.1;

export interface DraftCandidate {
  readonly alpha: number;
  /** Most draft tokens it may take (its proposal's length, its room before its limits). */
  readonly max: number;
}

/**
 * Draft tokens per candidate for a step that already holds `baseTokens` tokens and samples
 * `baseOutputs` sequences. Greedy over the tokens' worth α^j, best first, while the step's
 * expected output per unit of cost rises. Each draft token is counted at (1 - margin) of its
 * worth, so that a draft which only breaks even on the step's cost is not sent.
 */
export function allocateDrafts(
  candidates: readonly DraftCandidate[],
  baseTokens: number,
  baseOutputs: number,
  cost: StepCost | CostCurve,
  minAlpha: number,
  /** A costly proposer's draft step (every sequence's j-th draft token at once), in `cost`'s unit. */
  draftStep = 0,
  margin = DRAFT_MARGIN,
): number[] {
  const k = candidates.map(() => 0);
  // Next worth of each candidate (α^(k+1)); a plain scan per token is enough for batches
  // of a few hundred sequences and drafts of at most 16.
  const worth = candidates.map((c) => (c.max > 0 && c.alpha >= minAlpha ? c.alpha : 0));
  let tokens = Math.max(1, baseTokens);
  let expected = Math.max(1, baseOutputs);
  // Draft steps run one after another, each batched over the sequences still drafting: the
  // longest draft sets how many there are.
  let steps = 0;
  const c = costCurve(cost);
  const total = (t: number, s: number) => c(t) + draftStep * s;
  for (;;) {
    let best = -1;
    for (let i = 0; i < worth.length; i++) if (worth[i] > 0 && (best < 0 || worth[i] > worth[best])) best = i;
    if (best < 0) break;
    const g = worth[best] * (1 - margin);
    const moreSteps = Math.max(steps, k[best] + 1);
    const before = expected / total(tokens, steps);
    const after = (expected + g) / total(tokens + 1, moreSteps);
    if (after <= before) break;
    k[best]++;
    tokens++;
    steps = moreSteps;
    expected += g;
    worth[best] = k[best] < candidates[best].max ? worth[best] * candidates[best].alpha : 0;
  }
  return k;
}

export interface PacedCandidate extends DraftCandidate {
  /** Output the step gives this sequence without drafts: its sample and jump-forward's forced tokens. */
  readonly base: number;
}

/**
 * Draft tokens per candidate when no request waits for a slot: the batch moves at the pace of
 * its slowest sequence, so a level of drafts pays only when it raises every sequence's
 * expected output (relative to what the step gives it without drafts) and that rise beats
 * what the level adds to the step's cost. `pacers`: sequences in the step that take no
 * draft but set its pace all the same (a prompt in prefill, a fork): one of them means no
 * drafts. Within a level, a sequence past the pace keeps only the drafts that reach it.
 * One sequence alone gets what `allocateDrafts` would give it, searched over every k (a
 * dip in the cost curve does not stop the search).
 */
export function allocatePacedDrafts(
  candidates: readonly PacedCandidate[],
  pacers: number,
  baseTokens: number,
  cost: StepCost | CostCurve,
  minAlpha: number,
  draftStep = 0,
  margin = DRAFT_MARGIN,
): number[] {
  const none = candidates.map(() => 0);
  if (pacers > 0 || candidates.length === 0) return none;
  if (candidates.some((c) => c.max <= 0 || c.alpha < minAlpha)) return none;
  const c = costCurve(cost);
  // outputs[i][k]: the expected output of candidate i with k drafts, relative to its base.
  const outputs = candidates.map((cand) => {
    const base = Math.max(1, cand.base);
    const row = [1];
    let worth = 1;
    let sum = base;
    for (let j = 1; j <= cand.max; j++) {
      worth *= cand.alpha;
      sum += worth * (1 - margin);
      row.push(sum / base);
    }
    return row;
  });
  const deepest = Math.max(...candidates.map((cand) => cand.max));
  let best = none;
  let bestRate = 1 / c(Math.max(1, baseTokens));
  for (let level = 1; level <= deepest; level++) {
    let pace = Infinity;
    for (let i = 0; i < candidates.length; i++)
      pace = Math.min(pace, outputs[i][Math.min(level, candidates[i].max)]);
    // Each sequence takes the fewest drafts that reach the pace (no more: past it they cost and gain nothing).
    const k = outputs.map((row) => {
      let n = 0;
      while (row[n] < pace - 1e-12) n++;
      return n;
    });
    const tokens = Math.max(1, baseTokens) + k.reduce((a, b) => a + b, 0);
    const rate = pace / (c(tokens) + draftStep * Math.max(...k));
    if (rate > bestRate) {
      bestRate = rate;
      best = k;
    }
  }
  return best;
}
