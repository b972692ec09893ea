/**
 * What the engine's parts need of a KV pool, and the pool of a model that keeps none. The
 * scheduler admits and preempts by these calls, the status and the loop's failures read its
 * size, and split prefill/decode holds and takes its blocks. A decoder's pool is the paged
 * `BlockManager`; an encoder (BERT family, engine/pooling/) keeps no KV between steps, so its
 * runner says `keepsKv: false` and the engine gets `NoKvPool`: every sequence fits in no
 * blocks, and the scheduler admits it by the step's token budget and batch size alone.
 */
import type { BlockCopy, BlockManager, CachedPrefix, KvSequence } from './block-manager.js';

export type KvPool = Pick<
  BlockManager,
  | 'blockSize'
  | 'numBlocks'
  | 'freeBlocks'
  | 'uniformLayers'
  | 'queries'
  | 'hits'
  | 'findCachedPrefix'
  | 'freeAfterTaking'
  | 'admit'
  | 'blocksNeeded'
  | 'allocate'
  | 'registerFull'
  | 'trimToComputed'
  | 'fork'
  | 'free'
  | 'hold'
  | 'unhold'
  | 'takeLoose'
>;

const NONE: CachedPrefix = { blocks: [], keys: [] };

/** No KV at all: nothing to allocate, free, cache or move (split prefill/decode finds no room). */
export class NoKvPool implements KvPool {
  readonly numBlocks = 0;
  /** No sequence ever needs a block, so none is ever short: admission is by token budget alone. */
  readonly freeBlocks = 0;
  /** Its KV cannot move between engines (there is none). */
  readonly uniformLayers = false;
  readonly queries = 0;
  readonly hits = 0;

  constructor(readonly blockSize: number) {}

  findCachedPrefix(): CachedPrefix {
    return NONE;
  }
  /** The scheduler's room for a cached prefix plus new blocks: unbounded, as no block is ever taken. */
  freeAfterTaking(): number {
    return Number.POSITIVE_INFINITY;
  }
  admit(): void {}
  blocksNeeded(_seq: KvSequence, _numNew: number): number {
    return 0;
  }
  allocate(): BlockCopy | null {
    return null;
  }
  registerFull(): void {}
  trimToComputed(): void {}
  fork(): void {}
  free(seq: KvSequence): void {
    seq.blockTable = [];
    seq.blockKeys = [];
    seq.numComputed = 0;
  }
  hold(): void {}
  unhold(): void {}
  takeLoose(): number[] | null {
    return null;
  }
}
