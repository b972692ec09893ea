/**
 * The scheduler (vLLM v1 style, nano-vllm size): two queues and one `schedule()`. Each step
 * has one token budget (`maxPrefillTokens`) shared by decode tokens and prefill chunks.
 * Running sequences go first (a decode costs 1 token, an unfinished prefill takes what the
 * budget leaves, so a long prompt is chunked and never stalls decodes); then waiting ones in
 * arrival order, starting on their cached prefix. When the pool runs out of blocks, the
 * newest running sequence is preempted: its blocks are freed, it goes back to the front of
 * the queue and is recomputed later (prompt + what it generated so far: the same tokens).
 */
import type { BlockCopy, BlockManager } from './block-manager.js';
import { Sequence } from './request-state.js';

export interface ScheduledSeq {
  readonly seq: Sequence;
  /** First position computed in this step, and how many tokens. */
  readonly start: number;
  readonly numNew: number;
  /** Sample a token after the last one (the sequence reaches the end of its known tokens). */
  readonly sample: boolean;
}

export interface ScheduledBatch {
  readonly items: readonly ScheduledSeq[];
  readonly copies: readonly BlockCopy[];
  readonly numTokens: number;
}

export interface SchedulerLimits {
  readonly maxBatchSize: number;
  readonly maxPrefillTokens: number;
  readonly maxPrefillBatchSize: number;
  /** Distinct LoRA adapters one step may hold (native slots); absent = no limit. */
  readonly maxAdaptersPerStep?: number;
}

/** Hands out native LoRA slots (engine/adapters/manager.ts); may rebind an idle slot. */
export interface AdapterSlots {
  /** A slot for the adapter of `generation`, never one in `pinned`; -1 = none free now. */
  slotFor(generation: number, pinned: ReadonlySet<number>): number;
}

const U64 = (1n << 64n) - 1n;

export class Scheduler {
  readonly waiting: Sequence[] = [];
  readonly running: Sequence[] = [];
  preemptions = 0;

  constructor(
    private readonly limits: SchedulerLimits,
    readonly blocks: BlockManager,
    /** Told about each sequence a fork creates (the engine tracks its output). */
    private readonly onFork: (parent: Sequence, child: Sequence) => void = () => {},
    /** Adapter slots given at admission (more adapters loaded than slots); absent = fixed slots. */
    private readonly adapterSlots?: AdapterSlots,
  ) {}

  add(seq: Sequence): void {
    seq.status = 'waiting';
    this.waiting.push(seq);
  }

  get hasWork(): boolean {
    return this.waiting.length > 0 || this.running.length > 0;
  }

  /** Running slots, counting the copies that pending forks will add. */
  private get slotsUsed(): number {
    let n = this.running.length;
    for (const s of this.running) if (s.forkInto > 1) n += s.forkInto - 1;
    return n;
  }

  schedule(): ScheduledBatch {
    const B = this.blocks.blockSize;
    const items: ScheduledSeq[] = [];
    const copies: BlockCopy[] = [];
    let budget = this.limits.maxPrefillTokens;
    let prefills = 0;
    let preempted = false;

    // Decodes before prefill chunks, so a long prompt admitted earlier never takes the
    // budget a later sequence's next token needs; within each group, admission order.
    const order = [...this.running.filter((q) => !q.inPrefill), ...this.running.filter((q) => q.inPrefill)];
    const scheduled = new Set<Sequence>();
    // Adapters in this step: never more distinct ones than there are slots.
    const adapters = new Set<number>();
    const adapterFits = (q: Sequence) =>
      q.adapterSlot < 0 ||
      adapters.has(q.adapterSlot) ||
      adapters.size < (this.limits.maxAdaptersPerStep ?? Infinity);
    for (const seq of order) {
      if (budget <= 0) break;
      if (seq.status !== 'running') continue; // preempted earlier in this loop
      const n = Math.min(seq.numPending, budget);
      if (n <= 0) continue;
      if (!adapterFits(seq)) continue;
      if (seq.inPrefill && prefills >= this.limits.maxPrefillBatchSize) continue;
      let fits = true;
      while (this.blocks.blocksNeeded(seq, n) > this.blocks.freeBlocks) {
        // The newest running sequence not already in this step's batch.
        const victim = this.running.findLast((q) => !scheduled.has(q))!;
        this.preempt(victim);
        preempted = true;
        if (victim === seq) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      const prefill = seq.inPrefill;
      const copy = this.blocks.allocate(seq, n);
      if (copy) copies.push(copy);
      items.push({
        seq,
        start: seq.numComputed,
        numNew: n,
        sample: seq.numComputed + n === seq.tokens.length,
      });
      scheduled.add(seq);
      if (seq.adapterSlot >= 0) adapters.add(seq.adapterSlot);
      budget -= n;
      if (prefill) prefills++;
    }

    // Admit waiting sequences only when nothing had to be preempted (vLLM v1).
    while (
      !preempted &&
      this.waiting.length > 0 &&
      budget > 0 &&
      prefills < this.limits.maxPrefillBatchSize
    ) {
      const seq = this.waiting[0];
      if (this.slotsUsed + Math.max(1, seq.forkInto) > this.limits.maxBatchSize) break;
      if (!this.assignSlot(seq, adapters)) break; // FIFO: it waits for a slot to free
      if (!adapterFits(seq)) break; // FIFO: it waits for a step with room for its adapter
      const cached = this.blocks.findCachedPrefix(seq);
      const computedAfter = cached.blocks.length * B;
      const n = Math.min(seq.computeTarget - computedAfter, budget);
      const needed = Math.ceil((computedAfter + n) / B) - cached.blocks.length;
      if (needed > this.blocks.freeAfterTaking(cached.blocks)) break;
      this.waiting.shift();
      this.blocks.admit(seq, cached);
      if (seq.cachedPromptTokens < 0) seq.cachedPromptTokens = Math.min(seq.numComputed, seq.promptLen);
      seq.status = 'running';
      this.running.push(seq);
      if (n <= 0) {
        this.fork(seq); // the cache already covers all but the last prompt token
        continue;
      }
      const copy = this.blocks.allocate(seq, n);
      if (copy) copies.push(copy);
      items.push({
        seq,
        start: seq.numComputed,
        numNew: n,
        sample: seq.numComputed + n === seq.tokens.length,
      });
      if (seq.adapterSlot >= 0) adapters.add(seq.adapterSlot);
      budget -= n;
      prefills++;
    }
    return { items, copies, numTokens: this.limits.maxPrefillTokens - budget };
  }

  /**
   * Gives an admitted sequence's adapter a slot (its own, a free one, or an idle adapter's).
   * Slots of running sequences and of this step are pinned: a running sequence keeps its
   * slot until it ends or is preempted (then it gets one again when readmitted).
   */
  private assignSlot(seq: Sequence, inStep: ReadonlySet<number>): boolean {
    if (!this.adapterSlots || seq.adapterGeneration === 0) return true;
    const pinned = new Set(inStep);
    for (const r of this.running) if (r.adapterSlot >= 0) pinned.add(r.adapterSlot);
    const slot = this.adapterSlots.slotFor(seq.adapterGeneration, pinned);
    if (slot < 0) return false;
    seq.adapterSlot = slot;
    return true;
  }

  /** Applies a finished step: advances computed counts, keys full blocks, appends sampled tokens, forks. */
  postprocess(batch: ScheduledBatch, sampled: Int32Array): void {
    batch.items.forEach((item, k) => {
      const seq = item.seq;
      if (seq.status !== 'running') return;
      seq.numComputed += item.numNew;
      this.blocks.registerFull(seq);
      if (item.sample) seq.tokens.push(sampled[k]);
      else if (seq.forkInto > 1 && seq.numPending === 0) this.fork(seq);
    });
  }

  /** Removes a sequence for good and frees its blocks. */
  finish(seq: Sequence): void {
    if (!remove(this.running, seq)) remove(this.waiting, seq);
    this.blocks.free(seq);
    seq.status = 'finished';
  }

  private preempt(seq: Sequence): void {
    remove(this.running, seq);
    this.blocks.free(seq);
    seq.status = 'waiting';
    this.waiting.unshift(seq);
    this.preemptions++;
  }

  private fork(parent: Sequence): void {
    const k = parent.forkInto;
    parent.forkInto = 0;
    const prompt = parent.tokens.slice(0, parent.promptLen);
    for (let i = 1; i < k; i++) {
      const sampling = { ...parent.sampling, seed: (parent.sampling.seed + BigInt(i)) & U64 };
      const child = new Sequence(
        parent.requestId,
        parent.index + i,
        prompt,
        sampling,
        parent.arrival,
        0,
        parent.cacheExtra,
      );
      child.cachedPromptTokens = parent.cachedPromptTokens;
      child.adapterSlot = parent.adapterSlot;
      child.adapterGeneration = parent.adapterGeneration;
      this.blocks.fork(parent, child);
      child.status = 'running';
      this.running.push(child);
      this.onFork(parent, child);
    }
  }
}

function remove<T>(list: T[], item: T): boolean {
  const i = list.indexOf(item);
  if (i < 0) return false;
  list.splice(i, 1);
  return true;
}
