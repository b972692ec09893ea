/**
 * The draft-model proposer (`--speculative draft --draft-model PATH`): a second, smaller
 * model with the served model's vocabulary proposes k tokens greedily, on its own native
 * context and its own paged KV, batched across the sequences asked.
 *
 * Per sequence it remembers the tokens whose K/V its pool holds (`fed`, positions 0..). A
 * proposal first catches up: the sequence's tokens past the longest prefix it shares with
 * `fed` (the whole prompt the first time, in chunks of at most maxBatchTokens; after a verify
 * step, the accepted tokens and the one sampled after them), then it feeds its own draft
 * tokens one step at a time. Refused draft tokens are rolled back by that same comparison:
 * `fed` diverges from the verified tokens at the first refusal, so those positions are
 * recomputed next time; K/V past the kept prefix is never read before it is rewritten.
 *
 * Pages come from a free list over the draft's pool; a finished sequence's go back
 * (`release`, or at the next proposal once its status is finished). When the pool runs short, sequences not asked in this proposal lose their
 * draft KV (they catch up again later) before a sequence goes without a draft.
 */
import { step, type ContextHandle, type StepPlan, type StepResult } from '../../native/native.js';
import type { Sequence } from '../sequence.js';
import { draftStepPlan, type DraftRow } from './draft-plan.js';
import type { DraftAsk, Proposer } from './proposer.js';

export interface DraftModelOptions {
  readonly blockSize: number;
  /** Table entries per block of the draft model (its kvLayout.pagesPerBlock). */
  readonly pagesPerBlock: number;
  /** Pages in the draft's pool. */
  readonly pages: number;
  readonly maxSeqs: number;
  readonly maxBatchTokens: number;
  /** One draft step against a 1-token step of the served model (their weights' bytes). */
  readonly draftStepCost: number;
}

export type DraftStep = (ctx: ContextHandle, plan: StepPlan) => Promise<StepResult>;

interface SeqKv {
  /** Tokens whose K/V the draft pool holds, by position. */
  fed: number[];
  /** Page ids, pagesPerBlock per block. */
  pages: number[];
}

interface Lane {
  readonly seq: Sequence;
  readonly kv: SeqKv;
  readonly k: number;
  /** Verified tokens still to feed (catch-up), then the draft's own. */
  readonly catchUp: number[];
  readonly out: number[];
  /** A sample failed: no more draft tokens for it this time. */
  done: boolean;
}

export class DraftModelProposer implements Proposer {
  readonly method = 'draft' as const;
  readonly costly = true;
  readonly draftStepCost: number;
  private readonly free: number[];
  private readonly kv = new Map<Sequence, SeqKv>();

  constructor(
    private readonly ctx: ContextHandle,
    private readonly o: DraftModelOptions,
    private readonly onClose: () => void = () => {},
    private readonly run: DraftStep = step,
  ) {
    this.draftStepCost = o.draftStepCost;
    this.free = Array.from({ length: o.pages }, (_, i) => o.pages - 1 - i);
  }

  /** Pages the draft holds for live sequences (tests: all back after they finish). */
  get usedPages(): number {
    return this.o.pages - this.free.length;
  }

  async propose(asks: readonly DraftAsk[]): Promise<number[][]> {
    const out: number[][] = asks.map(() => []);
    // Sequences the engine finished without telling the proposer (cancelled ones reaped
    // between steps) give their pages back here.
    for (const [s, kv] of this.kv) if (s.status === 'finished') this.dropKv(s, kv);
    const asked = new Set(asks.map((a) => a.seq));
    const lanes: Lane[] = [];
    asks.forEach(({ seq, k }, i) => {
      const lane = this.lane(seq, k, out[i], asked);
      if (lane) lanes.push(lane);
    });
    for (let g = 0; g < lanes.length; g += this.o.maxSeqs)
      await this.draft(lanes.slice(g, g + this.o.maxSeqs));
    return out;
  }

  /** A sequence's lane: rolled back to what it shares with the verified tokens, pages for k. */
  private lane(seq: Sequence, k: number, out: number[], asked: ReadonlySet<Sequence>): Lane | null {
    const target = seq.computeTarget;
    if (k < 1 || target < 1) return null;
    let kv = this.kv.get(seq);
    if (!kv) this.kv.set(seq, (kv = { fed: [], pages: [] }));
    let keep = 0;
    const limit = Math.min(kv.fed.length, target - 1); // the last verified token is always fed
    while (keep < limit && kv.fed[keep] === seq.tokens[keep]) keep++;
    kv.fed.length = keep;
    // Positions 0 .. target + k - 2 are fed (the last draft token is not).
    if (!this.reserve(kv, target + k - 1, asked)) return null;
    return { seq, kv, k, catchUp: seq.tokens.slice(keep, target), out, done: false };
  }

  /** Pages for `positions` positions, evicting the draft KV of sequences not asked if short. */
  private reserve(kv: SeqKv, positions: number, asked: ReadonlySet<Sequence>): boolean {
    const ppb = this.o.pagesPerBlock;
    const need = Math.ceil(positions / this.o.blockSize) * ppb - kv.pages.length;
    if (need <= 0) return true;
    if (this.free.length < need)
      for (const [s, other] of this.kv) {
        if (asked.has(s)) continue;
        this.dropKv(s, other);
        if (this.free.length >= need) break;
      }
    if (this.free.length < need) return false;
    for (let i = 0; i < need; i++) kv.pages.push(this.free.pop()!);
    return true;
  }

  /** Catch-up chunks, then one draft token per step, all lanes of the group together. */
  private async draft(lanes: readonly Lane[]): Promise<void> {
    const { blockSize: bs, pagesPerBlock: ppb } = this.o;
    for (;;) {
      const rows: DraftRow[] = [];
      const fedBy: { lane: Lane; n: number; ends: boolean }[] = [];
      let budget = this.o.maxBatchTokens;
      for (const lane of lanes) {
        const { kv, catchUp, out } = lane;
        let tokens: number[];
        if (lane.done) continue;
        if (catchUp.length > 0) {
          if (budget <= 0) continue;
          tokens = catchUp.slice(0, budget);
        } else if (out.length > 0 && out.length < lane.k) tokens = [out[out.length - 1]];
        else continue;
        budget -= tokens.length;
        const start = kv.fed.length;
        rows.push({
          tokens,
          start,
          pages: kv.pages.slice(0, Math.ceil((start + tokens.length) / bs) * ppb),
          adapterSlot: -1,
        });
        fedBy.push({ lane, n: tokens.length, ends: catchUp.length <= tokens.length });
      }
      if (rows.length === 0) return;
      const r = await this.run(this.ctx, draftStepPlan(rows));
      fedBy.forEach(({ lane, n, ends }, s) => {
        const fed = lane.catchUp.length > 0 ? lane.catchUp.splice(0, n) : [lane.out[lane.out.length - 1]];
        lane.kv.fed.push(...fed);
        // The token after a chunk that ends the catch-up, or after a draft token, is the next draft token.
        if (ends && r.tokens[s] >= 0) lane.out.push(r.tokens[s]);
        else if (ends) lane.done = true;
      });
    }
  }

  private dropKv(seq: Sequence, kv: SeqKv): void {
    for (const p of kv.pages) this.free.push(p);
    this.kv.delete(seq);
  }

  release(seq: Sequence): void {
    const kv = this.kv.get(seq);
    if (kv) this.dropKv(seq, kv);
  }

  close(): void {
    this.kv.clear();
    this.onClose();
  }
}
