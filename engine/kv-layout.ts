/**
 * The paged KV cache's layout as the engine sees it (native/src/kv_layout.h makes it; ModelInfo
 * reports it). The pool is made of pages; a block of a sequence takes one page per block for
 * most models, and for a model that mixes global and sliding-window layers (Gemma 3) a few pages
 * of the global group plus a few of the sliding group, whose pages the block manager releases
 * behind the window. This module sizes the pool in pages.
 */
import type { KvLayout } from '../native/native.js';

/** One layer group: window 0 attends to the whole context; `pages` per block. */
export interface KvGroupLayout {
  readonly window: number;
  readonly pages: number;
}

/** The layout of a model that keeps every layer in one page per block (the classic paged cache). */
export function wholeLayout(numLayers: number, window = 0): KvLayout {
  return { pageLayers: numLayers, pagesPerBlock: 1, groups: [{ window, pages: 1 }] };
}

/** Bytes of one page: K and V, F16 (2 bytes per element), `pageLayers` layers of one block. */
export function kvBytesPerPage(
  layout: KvLayout,
  model: { readonly numKvHeads: number; readonly headDim: number },
  blockSize: number,
): number {
  return 2 * layout.pageLayers * model.numKvHeads * model.headDim * 2 * blockSize;
}

/**
 * The smallest pool that runs one sequence of `maxSeqLen`: a global group keeps every block
 * (plus one of headroom, as the whole-layer pool always had); a windowed group holds, while a
 * prefill chunk of up to `maxChunk` tokens runs, the blocks of the window before the chunk and
 * those of the chunk — never more than the global count.
 */
export function minKvPages(
  layout: KvLayout,
  o: { readonly maxSeqLen: number; readonly cacheBlockSize: number; readonly maxPrefillTokens: number },
): number {
  const B = o.cacheBlockSize;
  const whole = Math.ceil(o.maxSeqLen / B) + 1;
  let pages = 0;
  for (const g of layout.groups) {
    const blocks =
      g.window > 0 ? Math.min(whole, Math.ceil((g.window - 1 + o.maxPrefillTokens) / B) + 2) : whole;
    pages += blocks * g.pages;
  }
  return pages;
}

/**
 * The most pages one sequence of `maxSeqLen` holds at once, with no headroom: every block in a
 * global group; in a windowed group, while a chunk of up to `maxChunk` tokens runs from position
 * p, the blocks from the one holding p - window + 1 to the chunk's last — at most
 * ceil((window - 1 + maxChunk) / B) + 1 (the block manager releases the rest after each step).
 * An explicit `kvBlocks` must give the pool this many pages; for a model whose layers all attend
 * to the whole context it is ceil(maxSeqLen / B), the classic rule.
 */
export function sequencePages(
  layout: KvLayout,
  o: { readonly maxSeqLen: number; readonly cacheBlockSize: number; readonly maxPrefillTokens: number },
): number {
  const B = o.cacheBlockSize;
  const whole = Math.ceil(o.maxSeqLen / B);
  let pages = 0;
  for (const g of layout.groups) {
    const blocks =
      g.window > 0 ? Math.min(whole, Math.ceil((g.window - 1 + o.maxPrefillTokens) / B) + 1) : whole;
    pages += blocks * g.pages;
  }
  return pages;
}
