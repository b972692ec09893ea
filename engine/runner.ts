/**
 * The model runner: one scheduled batch in, sampled tokens out. The real one hands the plan
 * to the native core (off the JS thread); the engine core depends only on `Runner`, so the
 * scheduler's unit tests can drive it with a scripted runner while the engine itself always
 * runs this one.
 */
import {
  contextInfo,
  deviceCapabilities,
  hiddenStep,
  kvTransferLayout,
  readKvBlock,
  step,
  supplyMasks,
  writeKvBlock,
  type ContextHandle,
  type KvLayout,
  type KvTransferLayout,
  type StepPlan,
  type StepResult,
} from '../native/native.js';
import type { KvGroupLayout } from './kv-layout.js';
import { returnsState, type ScheduledBatch } from './scheduler.js';
import { buildStepPlan, lateMaskBuffer, lateMaskSources } from './step-plan.js';

/**
 * The part of a native StepResult the engine reads, and `states`: per item of the batch, the
 * state a pooling sequence's step returned instead of a sample (an encoder's pooled vector,
 * token states or scores; engine/pooling/), undefined for the others; absent: none.
 */
export type StepOutput = { readonly states?: readonly (Float32Array | undefined)[] } & Pick<
  StepResult,
  | 'tokens'
  | 'logprobs'
  | 'topLogprobsStride'
  | 'topLogprobIds'
  | 'topLogprobValues'
  | 'numAccepted'
  | 'acceptedLogprobs'
  | 'acceptedTopLogprobIds'
  | 'acceptedTopLogprobValues'
  | 'promptLogprobs'
  | 'promptLogprobRanks'
  | 'promptTopLogprobsStride'
  | 'promptTopLogprobIds'
  | 'promptTopLogprobValues'
>;

export interface Runner {
  readonly blockSize: number;
  /** Pages in the KV pool (blocks, when each block is one page). */
  readonly kvBlocks: number;
  /** The KV layout's layer groups (ModelInfo.kvLayout.groups); absent: one page per block, no window. */
  readonly kvGroups?: readonly KvGroupLayout[];
  /**
   * false: the model keeps no KV between steps (an encoder): the engine's pool has no blocks
   * (kv-pool.ts) and each prompt runs whole in one step. Absent: true.
   */
  readonly keepsKv?: boolean;
  /**
   * `late` (structured output): the constrained sequences' masks (seq.grammar.mask) are still
   * being computed; the step may start its forward pass and must sample only after
   * `late.masks` settles. Absent: every mask the step needs is already there (or none is).
   */
  step(batch: ScheduledBatch, late?: LateMasks): Promise<StepOutput>;
  /** Block-by-block access to the KV cache (split prefill/decode); absent: no KV transfer. */
  readonly kv?: KvStore;
  /** Passes that return a state instead of sampling (pooling); absent: the runner has none. */
  readonly states?: StatePass;
}

/**
 * A pass over sequences that samples nothing and returns, per sequence, the last token's
 * state: the final norm's output ([S × hidden], `hidden`) or the raw logits ([S × vocab
 * rows], `logits`). Its plan is an ordinary StepPlan whose sample flags are all 0.
 */
export interface StatePass {
  /** Table entries per block (ModelInfo.kvLayout.pagesPerBlock). */
  readonly pagesPerBlock: number;
  /** Width of a hidden state (ModelInfo.hiddenSize). */
  readonly hiddenSize: number;
  hidden(plan: StepPlan): Promise<Float32Array>;
  logits(plan: StepPlan): Promise<Float32Array>;
}

/** A runner's KV cache, block by block (the native copies), for split prefill/decode's transfers. */
export interface KvStore {
  readonly layout: KvTransferLayout;
  read(block: number, layerStart: number, layerCount: number): Uint8Array;
  write(block: number, layerStart: number, data: Uint8Array): void;
}

export interface LateMasks {
  readonly masks: Promise<void>;
  /** Told how long sampling waited for the masks after the forward pass (ms). */
  readonly waited?: (ms: number) => void;
}

export class NativeRunner implements Runner {
  readonly blockSize: number;
  readonly kvBlocks: number;
  readonly kvGroups: readonly KvGroupLayout[];
  readonly kv: KvStore | undefined;
  readonly states: StatePass | undefined;
  private readonly pagesPerBlock: number;

  constructor(
    private readonly ctx: ContextHandle,
    /** Rows of the logits (a mask row has ceil(vocabSize/32) words). */
    private readonly vocabSize: number,
    /** How the model's KV pages are laid out (ModelInfo.kvLayout). */
    layout: KvLayout,
    /** Pages the block manager may use: the pool's first ones (layer-skip keeps a few after them); default all. */
    poolPages?: number,
    /** ModelInfo.hiddenSize: the width of the state passes' hidden output (0: no state passes). */
    hiddenSize = 0,
  ) {
    this.kvGroups = layout.groups;
    this.pagesPerBlock = layout.pagesPerBlock;
    const info = contextInfo(ctx);
    this.blockSize = info.blockSize;
    this.kvBlocks = Math.min(info.kvBlocks, poolPages ?? info.kvBlocks);
    // A backend that cannot move KV blocks (CUDA, for now): no store, as for a runner without one.
    this.kv = deviceCapabilities(info.device).kvTransfer
      ? {
          layout: kvTransferLayout(ctx),
          read: (block, layerStart, layerCount) => readKvBlock(ctx, block, layerStart, layerCount),
          write: (block, layerStart, data) => writeKvBlock(ctx, block, layerStart, data),
        }
      : undefined;
    // The hidden-state pass (native/src/encoder/hidden_step_addon.cc), where the backend has it.
    this.states =
      deviceCapabilities(info.device).hiddenStates && hiddenSize > 0
        ? {
            pagesPerBlock: layout.pagesPerBlock,
            hiddenSize,
            hidden: (plan) => hiddenStep(ctx, plan),
            logits: (plan) =>
              step(ctx, { ...plan, returnLogits: 'last' }).then((r) => r.logits ?? new Float32Array(0)),
          }
        : undefined;
  }

  /**
   * A batch whose last items are pooling sequences' last chunks (the scheduler puts them last:
   * `returnsState`) runs as two native calls: the sampled rows' step, then one state pass
   * over those chunks — their prompt's last tokens computed once, nothing sampled — whose
   * states the output carries (`states`) at their item indices.
   */
  async step(batch: ScheduledBatch, late?: LateMasks): Promise<StepOutput> {
    const first = batch.items.findIndex(returnsState);
    if (first < 0 || !this.states) return this.sampledStep(batch, late);
    const K = batch.items.length;
    const sampledItems = batch.items.slice(0, first);
    const out: StepOutput =
      sampledItems.length > 0
        ? await this.sampledStep({ ...batch, items: sampledItems }, late)
        : {
            tokens: new Int32Array(0),
            logprobs: new Float32Array(0),
            topLogprobsStride: 0,
            topLogprobIds: new Int32Array(0),
            topLogprobValues: new Float32Array(0),
          };
    if (sampledItems.length === 0 && batch.copies.length > 0)
      throw new Error('a step of pooling chunks alone cannot carry block copies');
    const states = new Array<Float32Array | undefined>(K);
    for (const output of ['pooled', 'scores'] as const) {
      const rows: number[] = [];
      for (let k = first; k < K; k++) if (batch.items[k]!.seq.pooled!.output === output) rows.push(k);
      if (rows.length === 0) continue;
      const plan = statePlan(
        { items: rows.map((k) => batch.items[k]!), copies: [], numTokens: 0 },
        this.blockSize,
        this.pagesPerBlock,
      );
      const got = output === 'pooled' ? await this.states.hidden(plan) : await this.states.logits(plan);
      const width = got.length / rows.length;
      rows.forEach((k, i) => (states[k] = got.slice(i * width, (i + 1) * width)));
    }
    // The pooling items' tokens are placeholders the pooling extension takes.
    const tokens = new Int32Array(K);
    tokens.set(out.tokens.subarray(0, first));
    return { ...out, tokens, states };
  }

  private sampledStep(batch: ScheduledBatch, late?: LateMasks): Promise<StepOutput> {
    if (!late) return step(this.ctx, buildStepPlan(batch, this.blockSize, false, this.pagesPerBlock));
    // The forward pass starts now; the native step waits for the masks before sampling.
    const sources = lateMaskSources(batch);
    const result = step(this.ctx, buildStepPlan(batch, this.blockSize, true, this.pagesPerBlock));
    const words = Math.ceil(this.vocabSize / 32);
    const hand = (masks: Int32Array | null) => {
      try {
        supplyMasks(this.ctx, masks);
      } catch {
        // A wrong length is a bug here: fail the step, never leave it waiting. (A disposed
        // context throws again; disposing it already failed the step.)
        try {
          supplyMasks(this.ctx, null);
        } catch {
          /* see above */
        }
      }
    };
    // A grammar that failed leaves its mask missing: lateMaskBuffer lets it sample, and the
    // engine fails that sequence alone when its token comes back.
    late.masks.then(
      () => hand(lateMaskBuffer(sources, words)),
      () => hand(lateMaskBuffer(sources, words)),
    );
    return result.then((r) => {
      late.waited?.(r.lateMaskWaitMs ?? 0);
      return r;
    });
  }
}

/** A state pass's plan: the chunks as a step computes them, nothing sampled, no logprobs. */
function statePlan(batch: ScheduledBatch, blockSize: number, pagesPerBlock: number): StepPlan {
  const plan = buildStepPlan(batch, blockSize, false, pagesPerBlock);
  const S = batch.items.length;
  return {
    ...plan,
    sample: new Uint8Array(S),
    topLogprobs: new Int32Array(S).fill(-1),
    returnLogits: 'none',
  };
}
