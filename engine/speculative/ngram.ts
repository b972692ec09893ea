/**
 * The draft-free proposer: n-gram / prompt lookup (vLLM's `ngram`, llama.cpp's lookup
 * decoding, MindIE's `memory_decoding`). The last n tokens of a sequence (n from `maxN` down
 * to `minN`) are looked up among its earlier tokens, prompt and output alike; where they
 * occurred before, the tokens that followed that occurrence are the proposal. Text that
 * quotes its input (a rewrite, a summary, an edit of code, JSON that copies fields) repeats
 * long runs of the prompt, and this finds them for the price of a hash lookup.
 *
 * Each sequence keeps an index from every n-gram it holds to the end of its latest
 * occurrence, grown as tokens are verified (never for draft tokens: a sequence's `tokens`
 * hold verified ones only), so a lookup costs O(maxN) whatever the length. The index is
 * keyed by a 32-bit hash of the n-gram in a typed-array table (int-table.ts), not by a
 * string of it in a Map: the lookups run for every decoding sequence in every step, drafts
 * sent or not (adaptive-k scores the proposals it does not send), and string keys made them
 * ~70 µs of a 16-sequence chat step on the development CPU. A hit is compared token by
 * token, so a hash collision is a miss, never a wrong proposal (and a wrong proposal would
 * only be refused by verification).
 */
import type { Sequence } from '../sequence.js';
import { IntTable } from './int-table.js';
import type { DraftAsk, Proposer } from './proposer.js';

export interface NgramOptions {
  /** Longest suffix looked up (vLLM prompt_lookup_max). */
  readonly maxN: number;
  /** Shortest suffix looked up (vLLM prompt_lookup_min). */
  readonly minN: number;
}

export const NGRAM_DEFAULTS: NgramOptions = { maxN: 4, minN: 2 };

/** One sequence's n-gram index: the n-gram's hash → end of its latest occurrence (exclusive). */
export class NgramIndex {
  private readonly ends = new IntTable();
  /** Single tokens → end of their latest occurrence: the structural lookup of constrained output. */
  private readonly lastSeen = new IntTable();
  /** Tokens whose n-grams ending at them are indexed: every end in [n, indexed]. */
  private indexed = 0;

  constructor(private readonly o: NgramOptions) {}

  /**
   * Up to `k` tokens that followed the latest earlier occurrence of the longest suffix of
   * `tokens` found (of maxN..minN tokens); [] when none occurred before.
   *
   * `forced`: the last tokens that the grammar forced (jump-forward). A suffix made of them
   * alone and shorter than maxN is not looked up. It is template, not the model's choice: in
   * JSON extraction the 2-gram `": "` after each key matched the previous key's and proposed
   * the previous value (every time refused, on the benchmark's four prompts, three times per
   * output). A suffix of maxN template tokens still counts: it names the key (`"city": "`),
   * so it matches where the prompt or the output held that key before.
   *
   * `constrained` (output under a grammar): where no suffix of minN.. tokens is found (or only
   * template is left), the last token alone proposes the one token that followed its latest
   * occurrence. That is the document's structure repeating itself: in JSON extraction the
   * model samples `",` then ` "` at each key, and ` "` after each key's `":`; jump-forward
   * cannot force them (whitespace is free there), and their n-grams of two tokens hold the
   * key or the previous value. One token only: past it comes the next key or value.
   */
  propose(tokens: readonly number[], k: number, forced = 0, constrained = false): number[] {
    const L = tokens.length;
    // Index every n-gram that ends before the last token: an occurrence that ends at L is the
    // suffix itself, and one that ends at L-1 .. has a continuation to propose.
    this.grow(tokens, L - 1);
    const maxN = Math.min(this.o.maxN, L - 1);
    const hashes = suffixHashes(tokens, L, maxN);
    for (let n = maxN; n >= this.o.minN; n--) {
      if (n <= forced && n < this.o.maxN) break;
      const end = this.ends.get(hashes[n]);
      if (end === 0 || !sameRun(tokens, end - n, L - n, n)) continue;
      return tokens.slice(end, Math.min(end + k, L)) as number[];
    }
    if (constrained && k > 0 && L > 1) {
      const end = this.lastSeen.get(tokens[L - 1]);
      if (end !== 0) return [tokens[end]];
    }
    return [];
  }

  /** Indexes the n-grams ending at positions up to `upTo` (exclusive end). */
  private grow(tokens: readonly number[], upTo: number): void {
    for (let end = this.indexed + 1; end <= upTo; end++) {
      let h = HASH_SEED;
      for (let n = 1; n <= this.o.maxN && n <= end; n++) {
        h = mix(h, tokens[end - n]);
        if (n >= this.o.minN) this.ends.set(h, end);
      }
      this.lastSeen.set(tokens[end - 1], end);
    }
    if (upTo > this.indexed) this.indexed = upTo;
  }
}

const HASH_SEED = 0x2545f491;

/** One more token (taken from the end backwards) into an n-gram's 32-bit hash. */
function mix(h: number, token: number): number {
  const x = Math.imul(h ^ token, 0x9e3779b1);
  return x ^ (x >>> 15);
}

/** hashes[n]: the hash of the last n tokens before `end`, for n = 1..maxN, as grow() keys them. */
function suffixHashes(tokens: readonly number[], end: number, maxN: number): number[] {
  const out = [HASH_SEED];
  let h = HASH_SEED;
  for (let n = 1; n <= maxN; n++) out.push((h = mix(h, tokens[end - n])));
  return out;
}

/** Whether tokens[a, a+n) and tokens[b, b+n) hold the same tokens. */
function sameRun(tokens: readonly number[], a: number, b: number, n: number): boolean {
  if (a < 0) return false;
  for (let i = 0; i < n; i++) if (tokens[a + i] !== tokens[b + i]) return false;
  return true;
}

export class NgramProposer implements Proposer {
  readonly method = 'ngram';
  /** A lookup costs nothing: proposals are scored even where they are not sent (adaptive k). */
  readonly costly = false;
  private readonly index = new WeakMap<Sequence, NgramIndex>();

  constructor(private readonly o: NgramOptions = NGRAM_DEFAULTS) {
    if (!(Number.isInteger(o.minN) && o.minN >= 1 && Number.isInteger(o.maxN) && o.maxN >= o.minN))
      throw new RangeError(`n-gram sizes must satisfy 1 <= minN <= maxN, got ${o.minN}..${o.maxN}`);
  }

  propose(asks: readonly DraftAsk[]): number[][] {
    return asks.map(({ seq, k, forced, constrained }) => {
      let ix = this.index.get(seq);
      if (!ix) this.index.set(seq, (ix = new NgramIndex(this.o)));
      return k > 0 ? ix.propose(seq.tokens, k, forced, constrained) : [];
    });
  }

  release(seq: Sequence): void {
    this.index.delete(seq);
  }

  close(): void {}
}
