/**
 * KV block manager (nano-vllm's size, vLLM v1's semantics). A fixed pool of pages; a sequence's
 * block table holds, for every block of `blockSize` positions, `pagesPerBlock` page ids — one
 * page per block for most models (every layer's K/V in it), one per layer group for a model
 * that keeps global and sliding-window layers apart (engine/kv-layout.ts, Gemma 3). Full blocks
 * get a chained key `sha256(parentKey, token ids, extra)` — `extra` holds the adapter identity —
 * so a later prompt with the same prefix reuses their KV. Pages whose ref count drops to 0 keep
 * their key and sit in an O(1) LRU free list (intrusive doubly linked list): allocation takes
 * the least recently freed page, and a sequence frees its blocks tail first, so its tail is
 * evicted before the prefix that others are likelier to share. The pages of one group of one
 * block are taken, shared and released together; evicting one of them drops the key of all.
 *
 * Sliding windows: a group with window W > 0 (all its layers attend to at most the last W
 * positions) needs, once a step has computed a sequence up to position p, nothing before
 * p - W + 1, so registerFull releases that group's pages of the blocks wholly before it. They
 * go like any freed page, keeping their keys for the prefix cache, which stays correct because
 * a block's KV depends only on the tokens up to it. Their table entries become RELEASED; the
 * native attention never reads a block outside the window. A lookup needs a windowed group's
 * pages only for the blocks inside the window before the hit, so the prefix cache still hits
 * after the start of a long prompt was evicted. Mistral and Phi-3 (every layer slides) have one
 * windowed group; Gemma 3 a global group that keeps every block and a windowed one: long
 * contexts cost window-sized memory in its sliding layers.
 *
 * An optional observer hears every change to the set of cached blocks (a block keyed in
 * registerFull, a key dropped when its pages are taken for new tokens): engine/kv-events.ts
 * publishes them as vLLM's KV-cache events, so a router can mirror which prefixes this engine
 * holds. A router scores an engine by the longest run of a prompt's blocks, from the first,
 * that it holds, so a block counts as cached only while EVERY group holds it: with layer groups
 * a hit of n blocks needs the global group's n and the sliding group's blocks of the window
 * before n, and any block can be inside some prompt's window. A block whose sliding pages were
 * taken is reported removed although its global pages remain (a router may then under-score
 * a Gemma engine, never over-score it).
 */
import { createHash } from 'node:crypto';
import type { KvGroupLayout } from './kv-layout.js';

/** What the block manager reads and writes on a sequence. */
export interface KvSequence {
  /** Prompt + generated tokens (positions 0..length-1). */
  readonly tokens: readonly number[];
  /** Tokens whose KV is in the cache. */
  numComputed: number;
  /** Page ids, `pagesPerBlock` per block (RELEASED where a windowed group let a page go). */
  blockTable: number[];
  /** Keys of the sequence's full blocks, in order (the hash chain). */
  blockKeys: string[];
  /** Copy-on-write: the last block's pages are shared with the sequence this one was forked from. */
  cowPending: boolean;
  /** Prefix-cache isolation key (adapter identity); '' for the base model. */
  readonly cacheExtra: string;
  /** Every prompt token is computed: no prefix-cache lookup (its full blocks are still stored). */
  readonly wholePrompt?: boolean;
}

/** Copy-on-write of a sequence's last block: page src[i] is copied into page dst[i]. */
export interface BlockCopy {
  readonly src: readonly number[];
  readonly dst: readonly number[];
}

/** A prefix-cache hit: per block, its `pagesPerBlock` pages (RELEASED where not needed), and the keys. */
export interface CachedPrefix {
  readonly blocks: readonly (readonly number[])[];
  readonly keys: readonly string[];
}

/**
 * Hears the prefix cache change, synchronously, in the order the changes happen. Only keyed
 * blocks are reported: a block that holds tokens but no key is not reusable by a later prompt.
 */
export interface BlockCacheObserver {
  /** A full block is reusable under `key`; `parentKey` is its chain parent ('' for the first block). */
  stored(key: string, parentKey: string, tokens: Int32Array, extra: string): void;
  /** The block keyed `key` was taken for new tokens: nothing is reusable under `key` any more. */
  removed(key: string): void;
}

const NONE = -1;
/** A block-table entry whose page was released because it lies wholly outside the window. */
export const RELEASED = -1;

interface Group extends KvGroupLayout {
  /** Entry of this group's first page within a block's pages. */
  readonly offset: number;
  /** Key → the pages holding that block for this group, and the tokens they hold. */
  readonly byKey: Map<string, { pages: number[]; tokens: Int32Array }>;
}

export class BlockManager {
  /** Pages in the pool. */
  readonly numPages: number;
  readonly blockSize: number;
  readonly prefixCache: boolean;
  readonly pagesPerBlock: number;
  /** Prefix-cache lookups and hits, counted in prompt tokens. */
  queries = 0;
  hits = 0;
  private readonly groups: Group[];
  private readonly refs: Int32Array;
  /** Per page: the key it holds a block under (in group groupOf[p]), or null. */
  private readonly keys: (string | null)[];
  private readonly groupOf: Int32Array;
  // Free list: sentinel at index numPages; prev/next links; `inFree` flags membership.
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly inFree: Uint8Array;
  private freeCount = 0;

  constructor(
    numPages: number,
    blockSize: number,
    prefixCache: boolean,
    private readonly observer: BlockCacheObserver | null = null,
    /**
     * The model's KV groups (ModelInfo.kvLayout.groups), or for a one-page-per-block layout
     * the positions every layer attends to behind the newest (0: the whole sequence).
     */
    layout: number | readonly KvGroupLayout[] = 0,
  ) {
    if (!Number.isInteger(numPages) || numPages < 1)
      throw new RangeError(`numBlocks must be >= 1, got ${numPages}`);
    if (!Number.isInteger(blockSize) || blockSize < 1)
      throw new RangeError(`blockSize must be >= 1, got ${blockSize}`);
    const layouts = typeof layout === 'number' ? [{ window: layout, pages: 1 }] : layout;
    if (layouts.length === 0) throw new RangeError('the KV layout needs at least one group');
    let offset = 0;
    this.groups = layouts.map(({ window, pages }) => {
      if (!Number.isInteger(window) || window < 0)
        throw new RangeError(`window must be a whole number >= 0, got ${window}`);
      if (!Number.isInteger(pages) || pages < 1)
        throw new RangeError(`pages per block must be a whole number >= 1, got ${pages}`);
      const g = { window, pages, offset, byKey: new Map() };
      offset += pages;
      return g;
    });
    this.pagesPerBlock = offset;
    this.numPages = numPages;
    this.blockSize = blockSize;
    this.prefixCache = prefixCache;
    this.refs = new Int32Array(numPages);
    this.keys = new Array<string | null>(numPages).fill(null);
    this.groupOf = new Int32Array(numPages);
    this.prev = new Int32Array(numPages + 1);
    this.next = new Int32Array(numPages + 1);
    this.inFree = new Uint8Array(numPages);
    this.prev[numPages] = this.next[numPages] = numPages;
    for (let p = 0; p < numPages; p++) this.pushBack(p);
  }

  /**
   * Every layer in one page per block and none sliding: a block's KV is one page that stays
   * for the sequence's life (what split prefill/decode moves, engine/kv-transfer/).
   */
  get uniformLayers(): boolean {
    return this.groups.length === 1 && this.pagesPerBlock === 1 && this.groups[0].window === 0;
  }

  /** Blocks of every layer the pool holds (pages / pagesPerBlock). */
  get numBlocks(): number {
    return Math.floor(this.numPages / this.pagesPerBlock);
  }

  /** New blocks (of every layer) the free pages can take. */
  get freeBlocks(): number {
    return Math.floor(this.freeCount / this.pagesPerBlock);
  }

  /** Free pages (pages at ref 0, cached or not). */
  get freePages(): number {
    return this.freeCount;
  }

  /** The prefix cache's contents as the observer sees them: every block all groups hold. */
  *cachedBlocks(): IterableIterator<[key: string, tokens: Int32Array]> {
    for (const [key, e] of this.groups[0].byKey) if (this.heldByAll(key)) yield [key, e.tokens];
  }

  private heldByAll(key: string): boolean {
    return this.groups.every((g) => g.byKey.has(key));
  }

  /** Chain key of one full block. */
  static blockKey(parentKey: string, tokens: readonly number[], extra: string): string {
    const h = createHash('sha256');
    h.update(parentKey);
    h.update(Buffer.from(Int32Array.from(tokens).buffer));
    h.update('\0' + extra);
    return h.digest('base64url').slice(0, 32);
  }

  /**
   * Cached full blocks at the start of `seq.tokens`: the longest prefix of n blocks for which
   * every group holds what the next token reads — a global group all n blocks, a windowed
   * group the blocks inside the window before position n * blockSize — checking the stored
   * tokens, not only the key. At most (length-1) tokens are covered so the last token is
   * always computed (its logits are needed); none for a sequence that computes its whole
   * prompt. Pure: touches nothing.
   */
  findCachedPrefix(seq: KvSequence): CachedPrefix {
    if (!this.prefixCache || seq.wholePrompt) return { blocks: [], keys: [] };
    const B = this.blockSize;
    const keys: string[] = [];
    const keyAt = (i: number): string => {
      while (keys.length <= i) {
        const j = keys.length;
        const slice = seq.tokens.slice(j * B, (j + 1) * B);
        keys.push(BlockManager.blockKey(j === 0 ? '' : keys[j - 1], slice, seq.cacheExtra));
      }
      return keys[i];
    };
    const pagesAt = (g: Group, i: number): number[] | undefined => {
      const e = g.byKey.get(keyAt(i));
      return e && sameTokens(e.tokens, seq.tokens, i * B, B) ? e.pages : undefined;
    };
    let n = Math.floor((seq.tokens.length - 1) / B);
    for (const g of this.groups) {
      if (g.window > 0) continue;
      let m = 0;
      while (m < n && pagesAt(g, m)) m++;
      n = m;
    }
    // Each windowed group: the largest hit, at most n, whose window is cached (not monotone
    // in n, so it is searched downwards; repeated until every group agrees).
    for (let changed = true; changed;) {
      changed = false;
      for (const g of this.groups) {
        if (g.window === 0) continue;
        let m = n;
        while (m > 0 && !this.windowCached(g, m, pagesAt)) m--;
        if (m < n) {
          n = m;
          changed = true;
        }
      }
    }
    const blocks: number[][] = [];
    for (let i = 0; i < n; i++) {
      const row = new Array<number>(this.pagesPerBlock).fill(RELEASED);
      for (const g of this.groups) {
        if (g.window > 0 && i < this.firstKept(g, n * B)) continue;
        const pages = pagesAt(g, i)!;
        for (let k = 0; k < g.pages; k++) row[g.offset + k] = pages[k];
      }
      blocks.push(row);
    }
    return { blocks, keys: keys.slice(0, n) };
  }

  /** Free blocks left after taking the given cached blocks (their pages at ref 0 leave the free list). */
  freeAfterTaking(cached: CachedPrefix['blocks']): number {
    let revived = 0;
    for (const row of cached) for (const p of row) if (p !== RELEASED && this.refs[p] === 0) revived++;
    return Math.floor((this.freeCount - revived) / this.pagesPerBlock);
  }

  /** Starts a waiting sequence on its cached prefix (from findCachedPrefix) and counts the lookup. */
  admit(seq: KvSequence, cached: CachedPrefix): void {
    seq.blockTable = [];
    for (const row of cached.blocks)
      for (const p of row) {
        if (p !== RELEASED) this.take(p);
        seq.blockTable.push(p);
      }
    seq.blockKeys = cached.keys.slice();
    seq.numComputed = cached.blocks.length * this.blockSize;
    seq.cowPending = false;
    if (this.prefixCache) {
      this.queries += seq.tokens.length;
      this.hits += seq.numComputed;
    }
  }

  /** New blocks `seq` needs to hold `numNew` more tokens (a pending copy-on-write counts one). */
  blocksNeeded(seq: KvSequence, numNew: number): number {
    const want = Math.ceil((seq.numComputed + numNew) / this.blockSize);
    return Math.max(0, want - this.rows(seq)) + (seq.cowPending ? 1 : 0);
  }

  /** Grows the table for `numNew` more tokens; returns the page copies a pending copy-on-write needs. */
  allocate(seq: KvSequence, numNew: number): BlockCopy | null {
    const need = this.blocksNeeded(seq, numNew);
    if (need > this.freeBlocks)
      throw new Error(`KV pool exhausted: need ${need} blocks, ${this.freeBlocks} free`);
    let copy: BlockCopy | null = null;
    if (seq.cowPending) {
      const from = seq.blockTable.length - this.pagesPerBlock;
      const src = seq.blockTable.slice(from);
      // Every new page first, then the shared ones let go: a page released here is never
      // taken again as one of this block's copies.
      const dst = src.map((p) => (p === RELEASED ? RELEASED : this.takeFresh()));
      for (let k = 0; k < src.length; k++) {
        if (src[k] === RELEASED) continue;
        seq.blockTable[from + k] = dst[k];
        this.release(src[k]);
      }
      seq.cowPending = false;
      const kept = src.map((_, k) => k).filter((k) => src[k] !== RELEASED);
      copy = { src: kept.map((k) => src[k]), dst: kept.map((k) => dst[k]) };
    }
    const want = Math.ceil((seq.numComputed + numNew) / this.blockSize);
    for (let r = this.rows(seq); r < want; r++)
      for (let k = 0; k < this.pagesPerBlock; k++) seq.blockTable.push(this.takeFresh());
    return copy;
  }

  /**
   * Keys the blocks that became full since the last call (after a step computed them), and
   * in each windowed group releases the pages no later token of `seq` will read.
   */
  registerFull(seq: KvSequence): void {
    this.keyFull(seq);
    for (const g of this.groups) if (g.window > 0) this.releaseOutsideWindow(seq, g);
  }

  /**
   * Speculative decoding: releases the blocks (all their pages) past those that hold the
   * sequence's computed tokens (blocks a step allocated for draft tokens the sampler refused),
   * tail first. They were never keyed: only blocks full of computed tokens are.
   */
  trimToComputed(seq: KvSequence): void {
    const keep = Math.ceil(seq.numComputed / this.blockSize) * this.pagesPerBlock;
    while (seq.blockTable.length > keep) {
      const p = seq.blockTable.pop()!;
      if (p !== RELEASED) this.release(p);
    }
  }

  /** Shares `parent`'s blocks with `child`; a partly filled last block becomes copy-on-write. */
  fork(parent: KvSequence, child: KvSequence): void {
    child.blockTable = parent.blockTable.slice();
    child.blockKeys = parent.blockKeys.slice();
    child.numComputed = parent.numComputed;
    for (const p of child.blockTable) if (p !== RELEASED) this.refs[p]++;
    child.cowPending = parent.numComputed % this.blockSize !== 0 && child.blockTable.length > 0;
  }

  /** Releases a sequence's blocks, tail first (so its tail is evicted before its prefix). */
  free(seq: KvSequence): void {
    for (let i = seq.blockTable.length - 1; i >= 0; i--)
      if (seq.blockTable[i] !== RELEASED) this.release(seq.blockTable[i]);
    seq.blockTable = [];
    seq.blockKeys = [];
    seq.numComputed = 0;
    seq.cowPending = false;
  }

  /**
   * Split prefill/decode (engine/kv-transfer/): another reference on each block, held apart
   * from any sequence — a lease keeps a finished prompt's KV for the engine that pulls it, a
   * pull keeps the local cached prefix it builds on. A free page leaves the free list. KV
   * transfer runs only where a block is one page (`uniformLayers`), so pages are blocks here.
   */
  hold(blocks: readonly number[]): void {
    for (const b of blocks) this.take(b);
  }

  /** Drops references taken by `hold` or `takeLoose` (a block at 0 goes back to the free list). */
  unhold(blocks: readonly number[]): void {
    for (const b of blocks) this.release(b);
  }

  /** `n` fresh blocks with one reference each, for KV another engine sends; null when fewer are free. */
  takeLoose(n: number): number[] | null {
    if (n > this.freeCount) return null;
    return Array.from({ length: n }, () => this.takeFresh());
  }

  /** Ref count of a page (for tests and invariants). */
  refCount(page: number): number {
    return this.refs[page];
  }

  private rows(seq: KvSequence): number {
    return seq.blockTable.length / this.pagesPerBlock;
  }

  /** The first block a windowed group needs for the token at position `pos` (and later ones). */
  private firstKept(g: Group, pos: number): number {
    return Math.max(0, Math.floor((pos - g.window + 1) / this.blockSize));
  }

  /** Whether `g` holds the blocks the token at position n * blockSize reads (checked newest first). */
  private windowCached(g: Group, n: number, pagesAt: (g: Group, i: number) => number[] | undefined): boolean {
    for (let i = n - 1; i >= this.firstKept(g, n * this.blockSize); i--) if (!pagesAt(g, i)) return false;
    return true;
  }

  /** The group's pages of blocks wholly before position numComputed - window + 1 (the next token's first visible). */
  private releaseOutsideWindow(seq: KvSequence, g: Group): void {
    const outside = Math.min(this.firstKept(g, seq.numComputed), seq.blockKeys.length);
    for (let i = 0; i < outside; i++) {
      const at = i * this.pagesPerBlock + g.offset;
      if (seq.blockTable[at] === RELEASED) continue;
      for (let k = 0; k < g.pages; k++) {
        this.release(seq.blockTable[at + k]);
        seq.blockTable[at + k] = RELEASED;
      }
    }
  }

  private keyFull(seq: KvSequence): void {
    const B = this.blockSize;
    const full = Math.min(Math.floor(seq.numComputed / B), this.rows(seq));
    for (let i = seq.blockKeys.length; i < full; i++) {
      const slice = seq.tokens.slice(i * B, (i + 1) * B);
      const parent = i === 0 ? '' : seq.blockKeys[i - 1];
      const key = BlockManager.blockKey(parent, slice, seq.cacheExtra);
      seq.blockKeys.push(key);
      if (!this.prefixCache) continue;
      let stored: Int32Array | null = null;
      const wasCached = this.heldByAll(key);
      this.groups.forEach((g, gi) => {
        const pages = seq.blockTable.slice(
          i * this.pagesPerBlock + g.offset,
          i * this.pagesPerBlock + g.offset + g.pages,
        );
        // No deduplication: when other pages already hold this key, ours stay unkeyed.
        if (g.byKey.has(key) || pages.some((p) => p === RELEASED || this.keys[p] !== null)) return;
        stored ??= Int32Array.from(slice);
        g.byKey.set(key, { pages, tokens: stored });
        for (const p of pages) {
          this.keys[p] = key;
          this.groupOf[p] = gi;
        }
      });
      const held = this.groups[0].byKey.get(key);
      if (held && !wasCached && this.heldByAll(key))
        this.observer?.stored(key, parent, held.tokens, seq.cacheExtra);
    }
  }

  private take(p: number): void {
    if (this.refs[p] === 0) this.unlink(p);
    this.refs[p]++;
  }

  /**
   * Pops the least recently freed page. When it held a cached block, that block's key is
   * dropped and its other pages (free too: a group's pages share their ref count) go to the
   * front of the free list, holding nothing reusable.
   */
  private takeFresh(): number {
    const p = this.next[this.numPages];
    if (p === this.numPages) throw new Error('KV pool exhausted');
    this.unlink(p);
    const key = this.keys[p];
    if (key !== null) {
      const gi = this.groupOf[p];
      const g = this.groups[gi];
      const e = g.byKey.get(key);
      if (e?.pages.includes(p)) {
        const wasCached = this.heldByAll(key);
        g.byKey.delete(key);
        for (const q of e.pages) {
          this.keys[q] = null;
          if (q !== p && this.inFree[q]) {
            this.unlink(q);
            this.pushFront(q);
          }
        }
        if (wasCached) this.observer?.removed(key);
      }
      this.keys[p] = null;
    }
    this.refs[p] = 1;
    return p;
  }

  private release(p: number): void {
    if (this.refs[p] <= 0) throw new Error(`page ${p} released more often than taken`);
    if (--this.refs[p] === 0) {
      // Unkeyed pages hold nothing reusable: put them first in line for reuse.
      if (this.keys[p] === null) this.pushFront(p);
      else this.pushBack(p);
    }
  }

  private pushBack(p: number): void {
    const s = this.numPages;
    const last = this.prev[s];
    this.prev[p] = last;
    this.next[p] = s;
    this.next[last] = p;
    this.prev[s] = p;
    this.inFree[p] = 1;
    this.freeCount++;
  }

  private pushFront(p: number): void {
    const s = this.numPages;
    const first = this.next[s];
    this.next[p] = first;
    this.prev[p] = s;
    this.prev[first] = p;
    this.next[s] = p;
    this.inFree[p] = 1;
    this.freeCount++;
  }

  private unlink(p: number): void {
    if (!this.inFree[p]) throw new Error(`page ${p} is not free`);
    this.next[this.prev[p]] = this.next[p];
    this.prev[this.next[p]] = this.prev[p];
    this.prev[p] = this.next[p] = NONE;
    this.inFree[p] = 0;
    this.freeCount--;
  }
}

/** Whether `stored` equals tokens[from, from + n). */
function sameTokens(stored: Int32Array, tokens: readonly number[], from: number, n: number): boolean {
  if (stored.length !== n || from + n > tokens.length) return false;
  for (let i = 0; i < n; i++) if (stored[i] !== tokens[from + i]) return false;
  return true;
}
