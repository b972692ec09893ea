/**
 * KV block manager (nano-vllm's size, vLLM v1's semantics). A fixed pool of blocks of
 * `blockSize` token slots; each sequence owns a block table. Full blocks get a chained key
 * `sha256(parentKey, token ids, extra)` — `extra` is the slot an adapter identity will use —
 * so a later prompt with the same prefix reuses their KV. Blocks whose ref count drops to 0
 * keep their key and sit in an O(1) LRU free list (intrusive doubly linked list): allocation
 * takes the least recently freed block, and a sequence frees its blocks tail first, so its
 * tail is evicted before the prefix that others are likelier to share.
 *
 * Sliding windows (`window` > 0: every layer of the model attends to at most the last
 * `window` positions, as Mistral's and Phi-3's do): once a step has computed a sequence up to
 * position p, no later token reads a position before p - window + 1, so registerFull releases
 * the blocks wholly before that (tail-first order does not apply: they go like any freed
 * block, keeping their keys for the prefix cache, which stays correct because a block's KV
 * depends only on the tokens up to it). Their table entries become RELEASED; the native
 * attention never reads a block outside the window. A model whose layers do not all slide
 * (Gemma 3 mixes in global layers) keeps every block: window 0.
 *
 * An optional observer hears every change to the set of keyed blocks (a block keyed in
 * registerFull, a key dropped when its block is taken for new tokens): engine/kv-events.ts
 * publishes them as vLLM's KV-cache events, so a router can mirror which prefixes this engine
 * holds.
 */
import { createHash } from 'node:crypto';

/** What the block manager reads and writes on a sequence. */
export interface KvSequence {
  /** Prompt + generated tokens (positions 0..length-1). */
  readonly tokens: readonly number[];
  /** Tokens whose KV is in the cache. */
  numComputed: number;
  blockTable: number[];
  /** Keys of the sequence's full blocks, in order (the hash chain). */
  blockKeys: string[];
  /** Copy-on-write: the last table entry is shared with the sequence this one was forked from. */
  cowPending: boolean;
  /** Prefix-cache isolation key (adapter identity); '' for the base model. */
  readonly cacheExtra: string;
}

export interface BlockCopy {
  readonly src: number;
  readonly dst: number;
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
/** A block-table entry whose block was released because it lies wholly outside the window. */
export const RELEASED = -1;

export class BlockManager {
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly prefixCache: boolean;
  /** Prefix-cache lookups and hits, counted in prompt tokens. */
  queries = 0;
  hits = 0;
  private readonly refs: Int32Array;
  private readonly keys: (string | null)[];
  private readonly stored: (Int32Array | null)[];
  private readonly byKey = new Map<string, number>();
  // Free list: sentinel at index numBlocks; prev/next links; `inFree` flags membership.
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly inFree: Uint8Array;
  private freeCount = 0;

  constructor(
    numBlocks: number,
    blockSize: number,
    prefixCache: boolean,
    private readonly observer: BlockCacheObserver | null = null,
    /** Positions every layer attends to behind the newest (0: the whole sequence). */
    readonly window = 0,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1)
      throw new RangeError(`numBlocks must be >= 1, got ${numBlocks}`);
    if (!Number.isInteger(blockSize) || blockSize < 1)
      throw new RangeError(`blockSize must be >= 1, got ${blockSize}`);
    if (!Number.isInteger(window) || window < 0)
      throw new RangeError(`window must be a whole number >= 0, got ${window}`);
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.prefixCache = prefixCache;
    this.refs = new Int32Array(numBlocks);
    this.keys = new Array<string | null>(numBlocks).fill(null);
    this.stored = new Array<Int32Array | null>(numBlocks).fill(null);
    this.prev = new Int32Array(numBlocks + 1);
    this.next = new Int32Array(numBlocks + 1);
    this.inFree = new Uint8Array(numBlocks);
    this.prev[numBlocks] = this.next[numBlocks] = numBlocks;
    for (let b = 0; b < numBlocks; b++) this.pushBack(b);
  }

  get freeBlocks(): number {
    return this.freeCount;
  }

  /** The prefix cache's contents: the key and tokens of every block a later prompt can reuse. */
  *cachedBlocks(): IterableIterator<[key: string, tokens: Int32Array]> {
    for (const [key, b] of this.byKey) yield [key, this.stored[b]!];
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
   * Cached full blocks at the start of `seq.tokens`: walks the chain to the first miss and
   * checks the stored tokens (not only the key). At most (length-1) tokens are covered so
   * the last token is always computed (its logits are needed). Pure: touches nothing.
   */
  findCachedPrefix(seq: KvSequence): { blocks: number[]; keys: string[] } {
    const blocks: number[] = [];
    const keys: string[] = [];
    if (!this.prefixCache) return { blocks, keys };
    const B = this.blockSize;
    const maxBlocks = Math.floor((seq.tokens.length - 1) / B);
    let parent = '';
    for (let i = 0; i < maxBlocks; i++) {
      const slice = seq.tokens.slice(i * B, (i + 1) * B);
      const key = BlockManager.blockKey(parent, slice, seq.cacheExtra);
      const b = this.byKey.get(key);
      if (b === undefined || !sameTokens(this.stored[b], slice)) break;
      blocks.push(b);
      keys.push(key);
      parent = key;
    }
    return { blocks, keys };
  }

  /** Free blocks left after taking the given cached blocks (those at ref 0 leave the free list). */
  freeAfterTaking(cached: readonly number[]): number {
    let revived = 0;
    for (const b of cached) if (this.refs[b] === 0) revived++;
    return this.freeCount - revived;
  }

  /** Starts a waiting sequence on its cached prefix (from findCachedPrefix) and counts the lookup. */
  admit(seq: KvSequence, cached: { blocks: number[]; keys: string[] }): void {
    for (const b of cached.blocks) this.take(b);
    seq.blockTable = cached.blocks.slice();
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
    return Math.max(0, want - seq.blockTable.length) + (seq.cowPending ? 1 : 0);
  }

  /** Grows the table for `numNew` more tokens; returns the block copy a pending copy-on-write needs. */
  allocate(seq: KvSequence, numNew: number): BlockCopy | null {
    const need = this.blocksNeeded(seq, numNew);
    if (need > this.freeCount)
      throw new Error(`KV pool exhausted: need ${need} blocks, ${this.freeCount} free`);
    let copy: BlockCopy | null = null;
    if (seq.cowPending) {
      const last = seq.blockTable.length - 1;
      const src = seq.blockTable[last];
      const dst = this.takeFresh();
      seq.blockTable[last] = dst;
      this.release(src);
      seq.cowPending = false;
      copy = { src, dst };
    }
    const want = Math.ceil((seq.numComputed + numNew) / this.blockSize);
    while (seq.blockTable.length < want) seq.blockTable.push(this.takeFresh());
    return copy;
  }

  /**
   * Keys the blocks that became full since the last call (after a step computed them), and
   * under a sliding window releases the blocks no later token of `seq` will read.
   */
  registerFull(seq: KvSequence): void {
    this.keyFull(seq);
    if (this.window > 0) this.releaseOutsideWindow(seq);
  }

  /** Blocks wholly before position numComputed - window + 1 (the next token's first visible). */
  private releaseOutsideWindow(seq: KvSequence): void {
    const firstVisible = seq.numComputed - this.window + 1;
    const outside = Math.min(Math.floor(firstVisible / this.blockSize), seq.blockKeys.length);
    for (let i = 0; i < outside; i++) {
      if (seq.blockTable[i] === RELEASED) continue;
      this.release(seq.blockTable[i]);
      seq.blockTable[i] = RELEASED;
    }
  }

  private keyFull(seq: KvSequence): void {
    const B = this.blockSize;
    const full = Math.min(Math.floor(seq.numComputed / B), seq.blockTable.length);
    for (let i = seq.blockKeys.length; i < full; i++) {
      const slice = seq.tokens.slice(i * B, (i + 1) * B);
      const key = BlockManager.blockKey(i === 0 ? '' : seq.blockKeys[i - 1], slice, seq.cacheExtra);
      seq.blockKeys.push(key);
      const b = seq.blockTable[i];
      // No deduplication: when another block already holds this key, ours stays unkeyed.
      if (this.prefixCache && this.keys[b] === null && !this.byKey.has(key)) {
        const stored = Int32Array.from(slice);
        this.keys[b] = key;
        this.stored[b] = stored;
        this.byKey.set(key, b);
        this.observer?.stored(key, i === 0 ? '' : seq.blockKeys[i - 1], stored, seq.cacheExtra);
      }
    }
  }

  /** Shares `parent`'s blocks with `child`; a partly filled last block becomes copy-on-write. */
  fork(parent: KvSequence, child: KvSequence): void {
    child.blockTable = parent.blockTable.slice();
    child.blockKeys = parent.blockKeys.slice();
    child.numComputed = parent.numComputed;
    for (const b of child.blockTable) if (b !== RELEASED) this.refs[b]++;
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

  /** Ref count of a block (for tests and invariants). */
  refCount(block: number): number {
    return this.refs[block];
  }

  private take(b: number): void {
    if (this.refs[b] === 0) this.unlink(b);
    this.refs[b]++;
  }

  /** Pops the least recently freed block, dropping the cache entry it still carried. */
  private takeFresh(): number {
    const b = this.next[this.numBlocks];
    if (b === this.numBlocks) throw new Error('KV pool exhausted');
    this.unlink(b);
    const key = this.keys[b];
    if (key !== null) {
      if (this.byKey.get(key) === b) {
        this.byKey.delete(key);
        this.observer?.removed(key);
      }
      this.keys[b] = null;
      this.stored[b] = null;
    }
    this.refs[b] = 1;
    return b;
  }

  private release(b: number): void {
    if (this.refs[b] <= 0) throw new Error(`block ${b} released more often than taken`);
    if (--this.refs[b] === 0) {
      // Unkeyed blocks hold nothing reusable: put them first in line for reuse.
      if (this.keys[b] === null) this.pushFront(b);
      else this.pushBack(b);
    }
  }

  private pushBack(b: number): void {
    const s = this.numBlocks;
    const last = this.prev[s];
    this.prev[b] = last;
    this.next[b] = s;
    this.next[last] = b;
    this.prev[s] = b;
    this.inFree[b] = 1;
    this.freeCount++;
  }

  private pushFront(b: number): void {
    const s = this.numBlocks;
    const first = this.next[s];
    this.next[b] = first;
    this.prev[b] = s;
    this.prev[first] = b;
    this.next[s] = b;
    this.inFree[b] = 1;
    this.freeCount++;
  }

  private unlink(b: number): void {
    if (!this.inFree[b]) throw new Error(`block ${b} is not free`);
    this.next[this.prev[b]] = this.next[b];
    this.prev[this.next[b]] = this.prev[b];
    this.prev[b] = this.next[b] = NONE;
    this.inFree[b] = 0;
    this.freeCount--;
  }
}

function sameTokens(stored: Int32Array | null, tokens: readonly number[]): boolean {
  if (stored === null || stored.length !== tokens.length) return false;
  for (let i = 0; i < tokens.length; i++) if (stored[i] !== tokens[i]) return false;
  return true;
}
