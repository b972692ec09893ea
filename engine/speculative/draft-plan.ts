/**
 * The native StepPlan of one draft step (layer-skip and draft-model proposers): each sequence
 * feeds a few tokens at consecutive positions over its own block table and the sampler takes
 * the argmax of its last token's logits. No penalties, masks, seeds or logprobs: a draft only
 * has to be likely; the verify pass decides what is kept.
 */
import type { StepPlan } from '../../native/native.js';
import { greedySampling } from '../step-plan.js';

export interface DraftRow {
  /** Tokens fed this step, at positions start, start+1, ... */
  readonly tokens: readonly number[];
  readonly start: number;
  /** Page ids covering positions 0 .. start + tokens.length - 1 (pagesPerBlock per block). */
  readonly pages: readonly number[];
  /** LoRA slot (-1: base model). */
  readonly adapterSlot: number;
}

export function draftStepPlan(
  rows: readonly DraftRow[],
  opts: { readonly exitLayer?: number; readonly copies?: readonly number[] } = {},
): StepPlan {
  const S = rows.length;
  const T = rows.reduce((n, r) => n + r.tokens.length, 0);
  const tokens = new Int32Array(T);
  const positions = new Int32Array(T);
  const seqTokenOffsets = new Int32Array(S + 1);
  const blockTableOffsets = new Int32Array(S + 1);
  const blockTables = new Int32Array(rows.reduce((n, r) => n + r.pages.length, 0));
  const adapterSlots = new Int32Array(S);
  let t = 0;
  let b = 0;
  rows.forEach((r, s) => {
    r.tokens.forEach((tok, i) => {
      tokens[t] = tok;
      positions[t++] = r.start + i;
    });
    seqTokenOffsets[s + 1] = t;
    for (const p of r.pages) blockTables[b++] = p;
    blockTableOffsets[s + 1] = b;
    adapterSlots[s] = r.adapterSlot;
  });
  return {
    tokens,
    positions,
    seqTokenOffsets,
    blockTableOffsets,
    blockTables,
    ...(opts.copies && opts.copies.length > 0 ? { blockCopies: Int32Array.from(opts.copies) } : {}),
    sample: new Uint8Array(S).fill(1),
    ...greedySampling(S),
    ...(rows.some((r) => r.adapterSlot >= 0) ? { adapterSlots } : {}),
    ...(opts.exitLayer !== undefined ? { exitLayer: opts.exitLayer } : {}),
  };
}
