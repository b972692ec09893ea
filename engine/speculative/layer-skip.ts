/**
 * Self-speculation by layer skipping (`--speculative layer-skip`): the served model's first
 * `exitLayer` layers, its final norm and its head propose k tokens, greedily, one draft step
 * per token, batched across the sequences asked. No second model and no weights of its own.
 *
 * KV: for a verified position, layer l < exitLayer's K/V depends only on the layers below
 * it, so what the target's paged KV holds there is exactly what the draft needs, and the
 * draft reads it in place. The positions it feeds (the sequence's pending tokens, then its
 * own draft tokens) are written, layers below exitLayer only, at positions >= the sequence's
 * computed length: in the sequence's own blocks where its table has them, else in scratch
 * pages this proposer owns (reserved beside the pool, never handed to the block manager).
 * Nothing reads a position at or past a sequence's computed length before a full step
 * writes it (the verify pass writes every layer's K/V at the drafted positions before its
 * attention reads them), so a refused draft leaves nothing to roll back, and verified KV,
 * shared prefix-cache blocks included, is never overwritten. (The one shared block that can
 * hold an uncomputed position is a fully cached prompt's last block, whose last token a full
 * step recomputes in place as well.) Copying the block instead would cost a whole page
 * (every layer, 128 positions by default) per sequence and step.
 *
 * Adapters: the draft runs with each sequence's LoRA slot (the proposer is the model itself).
 */
import { step, type ContextHandle, type StepResult, type StepPlan } from '../../native/native.js';
import type { Sequence } from '../sequence.js';
import { draftStepPlan, type DraftRow } from './draft-plan.js';
import type { DraftAsk, Proposer } from './proposer.js';

export interface LayerSkipOptions {
  /** Layers the draft runs (1 .. the model's layers). */
  readonly exitLayer: number;
  readonly blockSize: number;
  /** Table entries per block (ModelInfo.kvLayout.pagesPerBlock). */
  readonly pagesPerBlock: number;
  /** Scratch pages for drafts that run past a sequence's blocks: these ids, one block's worth each use. */
  readonly scratchPages: readonly number[];
  /** Most sequences and tokens one native step takes (the context's maxSeqs, maxBatchTokens). */
  readonly maxSeqs: number;
  readonly maxBatchTokens: number;
  /** Relative cost of one draft step against a full step (the adaptive k weighs it). */
  readonly draftStepCost: number;
}

/** A native draft step (tests pass a counting wrapper). */
export type DraftStep = (ctx: ContextHandle, plan: StepPlan) => Promise<StepResult>;

interface Lane {
  readonly seq: Sequence;
  readonly k: number;
  /** Page ids for every position fed: the sequence's own, then scratch. */
  readonly pages: number[];
  readonly computed: number;
  readonly out: number[];
  /** Scratch pages among `pages`. */
  readonly scratch: number;
}

export class LayerSkipProposer implements Proposer {
  readonly method = 'layer-skip' as const;
  readonly costly = true;
  readonly draftStepCost: number;

  constructor(
    private readonly ctx: ContextHandle,
    private readonly o: LayerSkipOptions,
    private readonly run: DraftStep = step,
  ) {
    this.draftStepCost = o.draftStepCost;
  }

  async propose(asks: readonly DraftAsk[]): Promise<number[][]> {
    const out: number[][] = asks.map(() => []);
    let group: Lane[] = [];
    let tokens = 0;
    let scratch = 0;
    for (let i = 0; i < asks.length; i++) {
      const { seq } = asks[i];
      const pending = seq.numPending;
      if (pending < 1 || pending > this.o.maxBatchTokens) continue;
      if (group.length >= this.o.maxSeqs || tokens + pending > this.o.maxBatchTokens) {
        await this.draftGroup(group);
        group = [];
        tokens = 0;
        scratch = 0;
      }
      const lane = this.lane(asks[i], out[i], scratch);
      scratch += lane.scratch;
      group.push(lane);
      tokens += pending;
    }
    if (group.length > 0) await this.draftGroup(group);
    return out;
  }

  /**
   * A sequence's pages for its fed positions: its own table, then scratch from `scratchUsed`
   * on; where scratch runs out, its k is cut to the positions it has pages for.
   */
  private lane({ seq, k }: DraftAsk, out: number[], scratchUsed: number): Lane {
    const { blockSize: bs, pagesPerBlock: ppb } = this.o;
    const computed = seq.numComputed;
    const own = Math.floor(seq.blockTable.length / ppb);
    // Fed positions run to computeTarget + k - 2 (the last draft token is not fed).
    const lastBlock = Math.floor((seq.computeTarget + k - 2) / bs);
    const pages: number[] = [];
    for (let e = 0; e < Math.min(own, lastBlock + 1) * ppb; e++) pages.push(Math.max(0, seq.blockTable[e]));
    let next = scratchUsed;
    for (let b = own; b <= lastBlock && next + ppb <= this.o.scratchPages.length; b++)
      for (let p = 0; p < ppb; p++) pages.push(this.o.scratchPages[next++]);
    const covered = (pages.length / ppb) * bs; // positions with pages
    const kFit = Math.min(k, covered - seq.computeTarget + 1);
    return { seq, k: kFit, pages, computed, out, scratch: next - scratchUsed };
  }

  /** Up to k sequential draft steps for a group of sequences, one native step each. */
  private async draftGroup(lanes: readonly Lane[]): Promise<void> {
    const { blockSize: bs, pagesPerBlock: ppb } = this.o;
    for (let j = 0; ; j++) {
      const live = lanes.filter((l) => l.out.length === j && j < l.k);
      if (live.length === 0) return;
      const rows: DraftRow[] = live.map((l) => {
        const fed = j === 0 ? l.seq.tokens.slice(l.computed, l.seq.computeTarget) : [l.out[j - 1]];
        const start = j === 0 ? l.computed : l.seq.computeTarget + j - 1;
        const entries = Math.ceil((start + fed.length) / bs) * ppb;
        return { tokens: fed, start, pages: l.pages.slice(0, entries), adapterSlot: l.seq.adapterSlot };
      });
      const r = await this.run(this.ctx, draftStepPlan(rows, { exitLayer: this.o.exitLayer }));
      live.forEach((l, s) => {
        if (r.tokens[s] >= 0) l.out.push(r.tokens[s]);
      });
    }
  }

  release(): void {
    // Nothing per sequence: scratch pages are handed out afresh in every proposal.
  }

  close(): void {}
}
