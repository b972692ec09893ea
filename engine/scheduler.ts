/**
 * The scheduler (vLLM v1 style, nano-vllm size): two queues and one `schedule()`. Each step
 * has one token budget (`maxPrefillTokens`) shared by decode tokens and prefill chunks.
 * Running sequences go first (a decode costs 1 token, an unfinished prefill takes what the
 * budget leaves, so a long prompt is chunked and never stalls decodes); then waiting ones in
 * arrival order, starting on their cached prefix. When the pool runs out of blocks, the
 * newest running sequence is preempted: its blocks are freed, it goes back to the front of
 * the queue and is recomputed later (prompt + what it generated so far: the same tokens).
 *
 * Under the priority policy (vLLM's `--scheduling-policy priority`) the queue is ordered by
 * (priority, arrival), lower first; the victim of a preemption is the running sequence of the
 * lowest priority (latest arrival among equals); and before each step, while the first
 * waiting sequence cannot be admitted (no running slot, or too few free blocks for its first
 * chunk), running sequences of a strictly lower priority are preempted for it.
 *
 * The KV pool is the runner's capability (kv-pool.ts): a model that keeps no KV (an encoder)
 * has a pool where every sequence fits in no blocks, so it is admitted by the step's token
 * budget and batch size alone; with `wholePrompts` a prompt is never chunked (an encoder has
 * no KV to continue a chunk from), it waits until a step has room for all of it.
 */
import type { BlockCopy } from './block-manager.js';
import type { KvPool } from './kv-pool.js';
import type { Sequence } from './sequence.js';

export interface ScheduledSeq {
  readonly seq: Sequence;
  /** First position computed in this step, and how many tokens. */
  readonly start: number;
  readonly numNew: number;
  /** Sample a token after the last one (the sequence reaches the end of its known tokens). */
  readonly sample: boolean;
  /**
   * Speculative decoding: draft tokens placed after the `numNew` known ones (their K/V is
   * computed in this step too, their slots counted in its budget); the sampler verifies them.
   * Absent or empty: none.
   */
  readonly draft?: readonly number[];
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
  /** 'fcfs' (absent) or 'priority'. */
  readonly schedulingPolicy?: 'fcfs' | 'priority';
  /** A prompt runs whole in one step or waits (a model without KV); absent: long prompts are chunked. */
  readonly wholePrompts?: boolean;
}

/** Hands out native LoRA slots (engine/adapters/manager.ts); may rebind an idle slot. */
export interface AdapterSlots {
  /** A slot for the adapter of `generation`, never one in `pinned`; -1 = none free now. */
  slotFor(generation: number, pinned: ReadonlySet<number>): number;
}

export class Scheduler {
  readonly waiting: Sequence[] = [];
  readonly running: Sequence[] = [];
  preemptions = 0;

  constructor(
    private readonly limits: SchedulerLimits,
    readonly blocks: KvPool,
    /** Told about each sequence a fork creates (the engine tracks its output). */
    private readonly onFork: (parent: Sequence, child: Sequence) => void = () => {},
    /** Adapter slots given at admission (more adapters loaded than slots); absent = fixed slots. */
    private readonly adapterSlots?: AdapterSlots,
  ) {}

  private get byPriority(): boolean {
    return this.limits.schedulingPolicy === 'priority';
  }

  add(seq: Sequence): void {
    seq.status = 'waiting';
    if (this.byPriority) this.enqueueByPriority(seq);
    else this.waiting.push(seq);
  }

  /** Into the queue behind every sequence that goes before it: lower priority value, or equal and earlier. */
  private enqueueByPriority(seq: Sequence): void {
    const at = this.waiting.findIndex((q) => goesBefore(seq, q));
    if (at < 0) this.waiting.push(seq);
    else this.waiting.splice(at, 0, seq);
  }

  get hasWork(): boolean {
    return this.waiting.length > 0 || this.running.length > 0;
  }

  /** Running slots, counting the copies that pending forks (best_of, beams) will add. */
  private get slotsUsed(): number {
    let n = this.running.length;
    for (const s of this.running) n += s.extraSlots;
    return n;
  }

  /**
   * One step's batch. Running sequences first (decodes before prefill chunks, so a long
   * prompt admitted earlier never takes the budget a later sequence's next token needs;
   * within each group, admission order), preempting the newest running ones when blocks run
   * out; then, only if nothing had to be preempted (vLLM v1), waiting sequences in arrival
   * order, each starting on its cached prefix.
   */
  schedule(): ScheduledBatch {
    const step = new StepBudget(this.limits.maxPrefillTokens, this.limits.maxPrefillBatchSize);
    const adapters = new AdapterBudget(this.limits.maxAdaptersPerStep);
    if (this.byPriority) this.preemptForWaiting();
    const preempted = this.scheduleRunning(step, adapters);
    if (!preempted) this.admitWaiting(step, adapters);
    return step.batch();
  }

  /** Gives running sequences their next chunk; true when it had to preempt. */
  private scheduleRunning(step: StepBudget, adapters: AdapterBudget): boolean {
    const order = [...this.running.filter((q) => !q.inPrefill), ...this.running.filter((q) => q.inPrefill)];
    const scheduled = new Set<Sequence>();
    let preempted = false;
    for (const [at, seq] of order.entries()) {
      if (step.tokens <= 0) break;
      if (seq.status !== 'running') continue; // preempted earlier in this loop
      const n = keepSpansWhole(seq, seq.numComputed, step.chunkFor(seq.numPending), seq.numPending);
      if (n <= 0 || (this.limits.wholePrompts && n < seq.numPending)) continue;
      if (!adapters.fits(seq)) continue;
      if (seq.inPrefill && !step.prefillRoom) continue;
      let fits = true;
      while (this.blocks.blocksNeeded(seq, n) > this.blocks.freeBlocks) {
        // The newest running sequence not already in this step's batch (by priority: the
        // lowest-priority one, the newest among equals).
        const victim = this.victim((q) => !scheduled.has(q))!;
        this.preempt(victim);
        preempted = true;
        if (victim === seq) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      const prefill = seq.inPrefill;
      // Speculative decoding: the draft rides along only when the step takes every pending
      // token, within the budget the sequences after this one still need, and only on free
      // blocks (a draft never preempts anything).
      const draft = this.placeableDraft(seq, n, step.tokens - n - (order.length - at - 1));
      step.place(seq, n, this.blocks.allocate(seq, n + draft.length), prefill, draft);
      scheduled.add(seq);
      adapters.take(seq);
    }
    return preempted;
  }

  /** The running sequence to preempt among those `eligible` allows; undefined when none. */
  private victim(eligible: (q: Sequence) => boolean): Sequence | undefined {
    if (!this.byPriority) return this.running.findLast(eligible);
    let worst: Sequence | undefined;
    for (const q of this.running) if (eligible(q) && (!worst || !goesBefore(q, worst))) worst = q;
    return worst;
  }

  /**
   * Priority policy: while the first waiting sequence cannot be admitted for want of a running
   * slot or of free blocks for its first chunk, preempts the lowest-priority running sequence
   * whose priority is strictly lower than its own (never an equal one: no thrashing).
   */
  private preemptForWaiting(): void {
    const head = this.waiting[0];
    if (!head) return;
    const firstChunk = Math.min(head.computeTarget - head.numComputed, this.limits.maxPrefillTokens);
    const blocked = () =>
      this.slotsUsed + 1 + head.extraSlots > this.limits.maxBatchSize ||
      this.blocks.blocksNeeded(head, firstChunk) > this.blocks.freeBlocks;
    while (blocked()) {
      const victim = this.victim((q) => q.priority > head.priority);
      if (!victim) return;
      this.preempt(victim);
    }
  }

  /** The part of `seq.draft` that may join a chunk of `n` tokens with `room` budget left. */
  private placeableDraft(seq: Sequence, n: number, room: number): readonly number[] {
    if (!seq.draft || n !== seq.numPending || room <= 0) return NO_DRAFT;
    let d = Math.min(seq.draft.tokens.length, room);
    while (d > 0 && this.blocks.blocksNeeded(seq, n + d) > this.blocks.freeBlocks) d--;
    return d > 0 ? seq.draft.tokens.slice(0, d) : NO_DRAFT;
  }

  /** Admits waiting sequences in arrival order while the step has room (FIFO: the head blocks). */
  private admitWaiting(step: StepBudget, adapters: AdapterBudget): void {
    const B = this.blocks.blockSize;
    while (this.waiting.length > 0 && step.tokens > 0 && step.prefillRoom) {
      const seq = this.waiting[0];
      if (this.slotsUsed + 1 + seq.extraSlots > this.limits.maxBatchSize) break;
      if (!this.assignSlot(seq, adapters.inStep)) break; // it waits for a slot to free
      if (!adapters.fits(seq)) break; // it waits for a step with room for its adapter
      // A sequence that arrived with its KV (split prefill/decode, engine/kv-transfer/) holds
      // its blocks already and starts where they end; the others start on their cached prefix.
      const preloaded = seq.blockTable.length > 0;
      const cached = preloaded ? null : this.blocks.findCachedPrefix(seq);
      const computedAfter = cached ? cached.blocks.length * B : seq.numComputed;
      const pending = seq.computeTarget - computedAfter;
      const room = step.chunkFor(pending);
      const n = keepSpansWhole(seq, computedAfter, room, pending);
      if (room > 0 && n <= 0) break; // its next image needs a step with more room
      if (this.limits.wholePrompts && n < pending) break; // a later step takes it whole
      const needed = cached
        ? Math.ceil((computedAfter + n) / B) - cached.blocks.length
        : this.blocks.blocksNeeded(seq, n);
      if (needed > (cached ? this.blocks.freeAfterTaking(cached.blocks) : this.blocks.freeBlocks)) break;
      this.waiting.shift();
      if (cached) this.blocks.admit(seq, cached);
      if (seq.cachedPromptTokens < 0) seq.cachedPromptTokens = Math.min(seq.numComputed, seq.promptLen);
      seq.status = 'running';
      this.running.push(seq);
      if (n <= 0) {
        this.fork(seq); // the cache already covers all but the last prompt token
        continue;
      }
      step.place(seq, n, this.blocks.allocate(seq, n), true);
      adapters.take(seq);
    }
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

  /**
   * Applies a finished step: advances computed counts, keys full blocks, appends sampled tokens,
   * forks. `accepted` (speculative decoding): draft tokens the sampler accepted per item; they
   * join the sequence before its sampled token, and the blocks that held only refused ones
   * go back to the pool (their slots in kept blocks are overwritten by later tokens).
   */
  postprocess(batch: ScheduledBatch, sampled: Int32Array, accepted?: Int32Array): void {
    batch.items.forEach((item, k) => {
      const seq = item.seq;
      if (seq.status !== 'running') return;
      const draft = item.draft ?? NO_DRAFT;
      const a = draft.length > 0 ? Math.min(accepted?.[k] ?? 0, draft.length) : 0;
      for (let i = 0; i < a; i++) seq.tokens.push(draft[i]);
      seq.numComputed += item.numNew + a;
      if (draft.length > 0) this.blocks.trimToComputed(seq);
      this.blocks.registerFull(seq);
      // A beam's next token is chosen across its request's beams (the output processor).
      if (item.sample) {
        if (!seq.beam) seq.tokens.push(sampled[k]);
      } else if (seq.forkInto > 1 && seq.numPending === 0) this.fork(seq);
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
    if (this.byPriority) this.enqueueByPriority(seq);
    else this.waiting.unshift(seq);
    this.preemptions++;
  }

  /** A new running sequence sharing `parent`'s tokens and KV blocks copy-on-write (a beam two continuations keep). */
  forkRunning(parent: Sequence): Sequence {
    const child = parent.forkBeam();
    this.blocks.fork(parent, child);
    child.status = 'running';
    this.running.push(child);
    this.onFork(parent, child);
    return child;
  }

  private fork(parent: Sequence): void {
    const k = parent.forkInto;
    parent.forkInto = 0;
    for (let i = 1; i < k; i++) {
      const child = parent.forkChild(i);
      this.blocks.fork(parent, child);
      child.status = 'running';
      this.running.push(child);
      this.onFork(parent, child);
    }
  }
}

/**
 * A chunk of `n` of the `pending` tokens from position `start`, shortened so that it never
 * ends inside one of the sequence's bidirectional spans (Gemma 3's images: all of an image's
 * tokens must be computed in one step, its attention sees the image's later positions): it
 * ends before the span instead, or is 0 (wait) when it starts at or inside the span. The
 * vision extension refuses a span longer than a step's budget, so a whole one always fits.
 */
function keepSpansWhole(seq: Sequence, start: number, n: number, pending: number): number {
  const spans = seq.placed?.bidirectional;
  if (!spans || n >= pending || n <= 0) return n;
  const end = start + n;
  for (let k = 0; k < spans.length; k += 2) {
    const [a, b] = [spans[k], spans[k + 1]];
    if (a < end && end < b) return a > start ? a - start : 0;
  }
  return n;
}

/**
 * The step's token budget (`maxPrefillTokens`, shared by decode tokens and prefill chunks)
 * and prefill count (`maxPrefillBatchSize`), and the items placed so far.
 */
class StepBudget {
  private readonly items: ScheduledSeq[] = [];
  private readonly copies: BlockCopy[] = [];
  private prefills = 0;
  /** Tokens left in the step. */
  tokens: number;

  constructor(
    private readonly maxTokens: number,
    private readonly maxPrefills: number,
  ) {
    this.tokens = maxTokens;
  }

  /** Whether another prefill chunk may join the step. */
  get prefillRoom(): boolean {
    return this.prefills < this.maxPrefills;
  }

  /** How many of `pending` tokens the step can take now: a long prompt is chunked here. */
  chunkFor(pending: number): number {
    return Math.min(pending, this.tokens);
  }

  /**
   * Adds `n` tokens of `seq` (their blocks already allocated; `copy` a pending copy-on-write).
   * `prefill`: it counts against `maxPrefillBatchSize` (a running sequence still in its
   * prompt; every sequence admitted in this step).
   */
  place(seq: Sequence, n: number, copy: BlockCopy | null, prefill: boolean, draft = NO_DRAFT): void {
    if (copy) this.copies.push(copy);
    if (prefill) this.prefills++;
    this.items.push({
      seq,
      start: seq.numComputed,
      numNew: n,
      sample: seq.numComputed + n === seq.tokens.length,
      ...(draft.length > 0 ? { draft } : {}),
    });
    this.tokens -= n + draft.length;
  }

  /**
   * The step's items; a pooling sequence's last chunk goes after the others, so the runner
   * computes its state apart from the rows it samples (runner.ts) and the item indices of
   * both stay those of the batch.
   */
  batch(): ScheduledBatch {
    const last = this.items.filter(returnsState);
    const items = last.length === 0 ? this.items : [...this.items.filter((i) => !returnsState(i)), ...last];
    return { items, copies: this.copies, numTokens: this.maxTokens - this.tokens };
  }
}

/** Distinct LoRA adapters (native slots) in one step: never more than `limit`. */
class AdapterBudget {
  readonly inStep = new Set<number>();

  constructor(private readonly limit = Infinity) {}

  fits(seq: Sequence): boolean {
    return seq.adapterSlot < 0 || this.inStep.has(seq.adapterSlot) || this.inStep.size < this.limit;
  }

  take(seq: Sequence): void {
    if (seq.adapterSlot >= 0) this.inStep.add(seq.adapterSlot);
  }
}

const NO_DRAFT: readonly number[] = [];

/** A pooling sequence's last chunk: its step returns the sequence's state instead of a sample. */
export function returnsState(item: ScheduledSeq): boolean {
  return item.sample && item.seq.pooled !== null;
}

/** Priority order: lower priority value first, then earlier arrival. */
function goesBefore(a: Sequence, b: Sequence): boolean {
  return a.priority < b.priority || (a.priority === b.priority && a.arrival < b.arrival);
}

function remove<T>(list: T[], item: T): boolean {
  const i = list.indexOf(item);
  if (i < 0) return false;
  list.splice(i, 1);
  return true;
}
