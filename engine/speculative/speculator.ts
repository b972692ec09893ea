/**
 * Speculative decoding as the step loop sees it: two calls around a step.
 *
 *  - `propose(running)`, before the scheduler: decides each sequence's k (adaptive-k.ts),
 *    asks the proposer, lets structured output cut each draft at the first token its grammar
 *    refuses (and compute the masks of the verified positions), and leaves the result in
 *    `seq.draft`. The scheduler gives the sequence 1 + k token slots when the step has room.
 *  - `verified(batch, out)`, after the output processor: records what the native sampler
 *    accepted (metrics, each sequence's acceptance) and clears the drafts.
 *
 * Draft tokens never enter `seq.tokens` until they are verified, so the block manager keys
 * no block by them and a preempted sequence recomputes verified tokens only.
 */
import type { StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import {
  Acceptance,
  allocateDrafts,
  allocatePacedDrafts,
  DEFAULT_STEP_COST,
  stepCost,
  type CostCurve,
  type StepCost,
} from './adaptive-k.js';
import type { Draft } from '../step-draft.js';
import { SpecDecodeMetrics } from './metrics.js';
import type { Proposer } from './proposer.js';
import { StepCostEstimate } from './step-cost.js';

export interface SpeculatorOptions {
  /** Most draft tokens per sequence and step (num_speculative_tokens). */
  readonly numSpeculativeTokens: number;
  /** The step-cost model the adaptive k weighs draft tokens against; absent: learned from the steps (step-cost.ts). */
  readonly cost?: StepCost;
  /** Below this acceptance a sequence proposes nothing, whatever the cost model says. */
  readonly minAcceptance?: number;
  /**
   * Acceptance a new sequence starts with (before any verify step). Absent: what this
   * engine's recent sequences achieved (from 0.6 at start), so that on open-ended chat a new
   * sequence does not send a draft just to see it refused: the lower of the decaying average
   * of every verify outcome and shadow score, and that of the sequences that finished, one
   * vote each. The first alone stayed high for long after grounded requests: open-ended chat
   * records little (its lookups rarely find anything to propose), so each new chat request
   * began from the copies' 0.9 and sent its first proposals in full (after 48 rewrites, the
   * next 48 chat requests ran 7% slower at one sequence on the development CPU).
   */
  readonly priorAcceptance?: number;
  /** Adaptive k off: every proposal is sent in full (tests and the benchmark's fixed-k rows). */
  readonly fixedK?: boolean;
}

export interface SpeculatorHooks {
  /** Most draft tokens `seq` may still take: its request's max tokens and maxSeqLen, less the bonus token. */
  room(seq: Sequence): number;
  /** Structured output: cuts the drafts of constrained sequences and attaches their masks. */
  checkDrafts?(seqs: readonly Sequence[]): Promise<void>;
  /** Most sequences running at once (the engine's maxBatchSize); absent: no limit. */
  readonly slots?: number;
}

/** A sequence whose pending tokens are at most this many (decode, a jump-forward run) may draft. */
const MAX_PENDING = 16;
/** Costly proposers: a sequence whose k fell to 0 gets one draft token every this many steps (a probe costs a draft step). */
const PROBE_EVERY = 32;

export class Speculator {
  readonly metrics: SpecDecodeMetrics;
  private readonly acceptance = new WeakMap<Sequence, Acceptance>();
  /** Every sequence's verify outcomes and shadow scores, decaying: the prior of new sequences. */
  private readonly recent = new Acceptance(0.6, 0.98);
  /** Finished sequences' own acceptance, one vote each (those that recorded any), halving per vote. */
  private finished = 0.6;
  /** Free proposers: the first token proposed but not sent, scored against what came. */
  private readonly shadows = new WeakMap<Sequence, number>();
  /** Measured step costs, when no fixed cost model was given. */
  private readonly learned: StepCostEstimate | null;
  /**
   * Where the step's time starts: for a free proposer when proposing began (its lookups and
   * structured output's check of the drafts, which grows with them, are part of what a draft
   * costs); for a costly one when its proposal was ready (its draft steps are charged apart).
   */
  private proposedAt = -1;
  private proposing = -1;
  private steps = 0;
  private failures = 0;

  constructor(
    readonly proposer: Proposer,
    private readonly o: SpeculatorOptions,
    private readonly hooks: SpeculatorHooks,
  ) {
    this.metrics = new SpecDecodeMetrics(proposer.method, o.numSpeculativeTokens);
    this.learned = o.cost ? null : new StepCostEstimate(DEFAULT_STEP_COST);
  }

  /** The cost of a step of `seqs` sequences: the fixed model, or the one learned for that batch size. */
  costCurve(seqs: number): CostCurve {
    const fixed = this.o.cost;
    return fixed ? (t) => stepCost(fixed, t) : this.learned!.curve(seqs);
  }

  /**
   * Sets `seq.draft` for the running sequences that will sample in the next step. Returns a
   * promise only when it has to wait (a model pass, a grammar check); a failed proposal
   * leaves the sequences without drafts, never fails a request. `queued`: sequences waiting
   * to be admitted (the scheduler's queue). Where they wait for a slot, a sequence that
   * finishes early lets one in, and every token counts alike (allocateDrafts). Otherwise the
   * batch is all the work there is, and drafts must raise the pace of the whole of it
   * (allocatePacedDrafts); a waiting sequence with a slot free is a prompt about to be
   * prefilled in this step, which sets that pace: no drafts then.
   */
  propose(running: readonly Sequence[], queued = 0): Promise<void> | void {
    this.steps++;
    this.proposing = performance.now();
    try {
      const pending = this.tryPropose(running, queued);
      if (pending)
        return pending.then(
          () => this.ready(),
          (e: unknown) => {
            this.dropDrafts(running, e);
            this.ready();
          },
        );
    } catch (e) {
      this.dropDrafts(running, e);
    }
    this.ready();
  }

  private ready(): void {
    this.proposedAt = this.proposer.costly ? performance.now() : this.proposing;
  }

  private dropDrafts(running: readonly Sequence[], e: unknown): void {
    for (const seq of running) seq.draft = null;
    this.failures++;
    if (this.failures === 1 || this.failures % 1000 === 0)
      process.emitWarning(
        `speculative decoding: proposing failed (${this.failures} time(s)), steps go on without drafts: ${e instanceof Error ? e.message : String(e)}`,
      );
  }

  private tryPropose(running: readonly Sequence[], queued: number): Promise<void> | void {
    const eligible: Sequence[] = [];
    const room: number[] = [];
    const base: number[] = [];
    let baseTokens = 0;
    // Sequences that take no draft but keep the batch going: a prompt in prefill, a fork.
    const waitForSlots = queued > 0 && running.length + queued > (this.hooks.slots ?? Infinity);
    let pacers = waitForSlots ? 0 : queued;
    // Output the step gives without drafts: each decoding sequence's sample and the tokens
    // jump-forward appended before it (output too, and computed in this step); one for a
    // sequence in prefill. Counting the forced tokens' cost but not their output made a
    // step that carried them look unproductive, so that drafts looked cheap beside it.
    let baseOutputs = 0;
    for (const seq of running) {
      seq.draft = null;
      if (seq.status !== 'running' || seq.aborted) continue;
      baseTokens += Math.min(seq.numPending, MAX_PENDING);
      baseOutputs += seq.numPending <= MAX_PENDING ? Math.max(1, seq.numPending) : 1;
      if (seq.numPending < 1) continue;
      if (seq.forkInto > 1 || seq.numPending > MAX_PENDING) {
        pacers++;
        continue;
      }
      // No room: the sequence ends with this step's token (or may not draft by its request's
      // rules): it does not set the batch's pace.
      const r = Math.min(this.o.numSpeculativeTokens, this.hooks.room(seq));
      if (r <= 0) continue;
      eligible.push(seq);
      room.push(r);
      base.push(Math.max(1, seq.numPending));
    }
    if (eligible.length === 0) return;
    const alpha = eligible.map((s) => this.acceptanceOf(s).alpha);
    const allocate = (max: readonly number[]) => {
      if (this.o.fixedK) return [...max];
      // The verify step is charged on the curve measured for a batch of this many sequences.
      const cost = this.costCurve(running.length);
      const minAlpha = this.o.minAcceptance ?? 0.2;
      // A draft step runs every drafting sequence's next token at once.
      const draftStep = (this.proposer.draftStepCost ?? 0) * cost(eligible.length);
      if (!waitForSlots && eligible.length + pacers > 1)
        return allocatePacedDrafts(
          max.map((m, i) => ({ alpha: alpha[i], max: m, base: base[i] })),
          pacers,
          baseTokens,
          cost,
          minAlpha,
          draftStep,
        );
      return allocateDrafts(
        max.map((m, i) => ({ alpha: alpha[i], max: m })),
        baseTokens,
        baseOutputs,
        cost,
        minAlpha,
        draftStep,
      );
    };
    if (!this.proposer.costly) {
      // A lookup is free: propose for all, then send what pays.
      // A decoding sequence's pending tokens are its sample and, after it, the tokens
      // jump-forward appended: those the n-gram lookup does not take for the model's text.
      const proposals = this.proposer.propose(
        eligible.map((seq, i) => ({
          seq,
          k: room[i],
          forced: seq.numPending - 1,
          constrained: seq.grammar !== null,
        })),
      );
      if (proposals instanceof Promise) throw new Error('a free proposer must answer at once');
      return this.attach(eligible, proposals, allocate(proposals.map((p) => p.length)));
    }
    // A model pass is not: decide first, then propose for the sequences given slots.
    const k = allocate(room).map((n, i) =>
      n === 0 && this.steps % PROBE_EVERY === 0 ? Math.min(1, room[i]) : n,
    );
    const asked = eligible.map((seq, i) => ({ seq, k: k[i] })).filter((a) => a.k > 0);
    if (asked.length === 0) return;
    return Promise.resolve(this.proposer.propose(asked)).then((got) => {
      let j = 0;
      return this.attach(
        eligible,
        k.map((n) => (n > 0 ? got[j++] : [])),
        k,
      );
    });
  }

  /** Drafts of k[i] tokens from each proposal; constrained ones are checked by their grammar. */
  private attach(eligible: readonly Sequence[], proposals: readonly number[][], k: readonly number[]) {
    const drafted: Sequence[] = [];
    eligible.forEach((seq, i) => {
      const tokens = proposals[i].slice(0, k[i]);
      if (tokens.length > 0) {
        seq.draft = { tokens, masks: null, jumps: null } satisfies Draft;
        drafted.push(seq);
      } else if (proposals[i].length > 0) {
        this.shadows.set(seq, proposals[i][0]);
      }
    });
    if (this.hooks.checkDrafts && drafted.some((s) => s.grammar)) return this.hooks.checkDrafts(drafted);
  }

  /** After a step: what the sampler accepted, per sequence; the drafts are spent. */
  verified(batch: ScheduledBatch, out: StepOutput): void {
    if (this.learned && this.proposedAt >= 0) {
      const tokens = timedStepTokens(batch);
      if (tokens !== null)
        this.learned.record(batch.items.length, tokens, performance.now() - this.proposedAt);
      this.proposedAt = -1;
    }
    batch.items.forEach((item, k) => {
      const seq = item.seq;
      seq.draft = null;
      if (!item.sample || out.tokens[k] < 0) return;
      const drafted = item.draft?.length ?? 0;
      if (drafted > 0) {
        const accepted = out.numAccepted?.[k] ?? 0;
        this.metrics.record(drafted, accepted);
        this.acceptanceOf(seq).record(drafted, accepted);
        this.recent.record(drafted, accepted);
        return;
      }
      const shadow = this.shadows.get(seq);
      if (shadow === undefined) return;
      this.shadows.delete(seq);
      const hit = shadow === out.tokens[k] ? 1 : 0;
      this.acceptanceOf(seq).record(1, hit);
      this.recent.record(1, hit);
    });
  }

  /** Forgets a finished sequence. */
  release(seq: Sequence): void {
    const own = this.acceptance.get(seq);
    if (own && own.records > 0) this.finished = 0.5 * this.finished + 0.5 * own.alpha;
    seq.draft = null;
    this.acceptance.delete(seq);
    this.shadows.delete(seq);
    this.proposer.release(seq);
  }

  async close(): Promise<void> {
    await this.proposer.close();
  }

  private acceptanceOf(seq: Sequence): Acceptance {
    let a = this.acceptance.get(seq);
    if (!a) {
      const prior = this.o.priorAcceptance ?? Math.min(this.recent.alpha, this.finished);
      this.acceptance.set(seq, (a = new Acceptance(prior)));
    }
    return a;
  }
}

/**
 * The tokens of a step the learned cost line may take, or null for a step it must not: only
 * steps whose every sequence computes one new token plus its draft count. The line's slope is
 * what it charges a draft token, and every draft position is read by the sampler (a logits
 * row through the model's head, a masked sample). A step's other extra positions are not: a
 * prefill chunk's, or the tokens jump-forward appended under structured output. Those cost
 * less (on the default model the head is a fifth of the weights): JSON extraction at 16
 * sequences on the development CPU took ~3 ms per forced token and ~5-6.6 ms per verify
 * token, so a line through both charged drafts too little.
 */
export function timedStepTokens(batch: ScheduledBatch): number | null {
  let tokens = 0;
  for (const item of batch.items) {
    if (item.numNew !== 1) return null;
    tokens += 1 + (item.draft?.length ?? 0);
  }
  return tokens;
}
