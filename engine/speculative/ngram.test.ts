import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NGRAM_DEFAULTS, NgramIndex, NgramProposer } from './ngram.js';
import { Sequence, type SequenceSampling } from '../sequence.js';
import { GREEDY_SAMPLING } from '../testing/greedy-sampling.js';

const sampling: SequenceSampling = GREEDY_SAMPLING;

test('the longest suffix found earlier proposes what followed its latest occurrence', () => {
  const ix = new NgramIndex({ maxN: 3, minN: 1 });
  //            0  1  2  3  4  5  6  7  8  9
  const toks = [1, 2, 3, 4, 5, 9, 2, 3, 4, 7, 2, 3];
  // Suffix [4? no] (7,2,3) unseen; (2,3) last seen ending at 8 → propose 4,7,2
  assert.deepEqual(ix.propose(toks, 3), [4, 7, 2]);
  // A longer match wins over a more recent shorter one.
  const ix2 = new NgramIndex({ maxN: 3, minN: 1 });
  assert.deepEqual(ix2.propose([5, 6, 7, 8, 1, 7, 9, 5, 6, 7], 2), [8, 1]);
});

test('no proposal without an earlier occurrence; the proposal never runs past the end', () => {
  const ix = new NgramIndex({ maxN: 4, minN: 2 });
  assert.deepEqual(ix.propose([1, 2, 3, 4], 5), []);
  assert.deepEqual(ix.propose([1, 2, 3, 4, 1, 2], 5), [3, 4, 1, 2]);
  // A run of one token proposes itself again.
  assert.deepEqual(new NgramIndex({ maxN: 2, minN: 2 }).propose([8, 8, 8], 3), [8]);
});

test('the index grows with the sequence and finds later occurrences', () => {
  const p = new NgramProposer({ maxN: 2, minN: 2 });
  const seq = new Sequence({ requestId: 'r', prompt: [1, 2, 3, 1], sampling, arrival: 0 });
  assert.deepEqual(p.propose([{ seq, k: 2 }]), [[]]);
  seq.tokens.push(2);
  assert.deepEqual(p.propose([{ seq, k: 2 }]), [[3, 1]]);
  seq.tokens.push(5, 1, 2);
  assert.deepEqual(p.propose([{ seq, k: 3 }]), [[5, 1, 2]], 'the latest occurrence of (1, 2)');
  assert.throws(() => new NgramProposer({ maxN: 1, minN: 2 }), /1 <= minN <= maxN/);
});

test('a suffix of grammar-forced tokens alone, shorter than maxN, is not looked up; maxN of them are', () => {
  // JSON extraction: `{"name": "Ada", "city": "` — the 2-gram `": "` (tokens 3, 4) that
  // jump-forward appended after the key `city` (9) matched the one after `name` (2) and
  // proposed the previous value (5 = Ada) at every value's start.
  const out = [1, 2, 3, 4, 5, 6, 8, 9, 3, 4];
  assert.deepEqual(new NgramIndex({ maxN: 4, minN: 2 }).propose(out, 3), [5, 6, 8], 'the old rule');
  assert.deepEqual(new NgramIndex({ maxN: 4, minN: 2 }).propose(out, 3, 4), []);
  // A match longer than the forced run includes a token the model chose: looked up as before.
  assert.deepEqual(new NgramIndex({ maxN: 4, minN: 2 }).propose(out, 3, 1), [5, 6, 8]);
  // maxN forced tokens name the key: a key seen before (here in the prompt) still proposes.
  const prompt = [7, 8, 9, 3, 4, 11, 12, 0];
  const withKey = [...prompt, 1, 2, 3, 4, 5, 6, 8, 9, 3, 4];
  assert.deepEqual(new NgramIndex({ maxN: 4, minN: 2 }).propose(withKey, 2, 4), [11, 12]);
});

test('the proposer passes on how many of the last tokens were forced', () => {
  const p = new NgramProposer({ maxN: 4, minN: 2 });
  const seq = new Sequence({ requestId: 'r', prompt: [1, 2, 3, 4, 5, 6, 8, 9, 3, 4], sampling, arrival: 0 });
  assert.deepEqual(p.propose([{ seq, k: 2, forced: 3 }]), [[]]);
  assert.deepEqual(p.propose([{ seq, k: 2 }]), [[5, 6]]);
});

test('constrained output: where no longer suffix is found, the last token proposes the one token that followed it', () => {
  // JSON extraction's structure: `",` (5) was followed by ` "` (6) at the previous key, and
  // `":` (8) by ` "`; 2-token suffixes hold the key or the value (not seen before).
  //            {  "  name  ": ' "' Ada  ",  ' "'  city  ":
  const toks = [1, 2, 30, 8, 6, 40, 5, 6, 31, 8];
  const ix = new NgramIndex({ maxN: 4, minN: 2 });
  assert.deepEqual(ix.propose(toks, 5), [], 'unconstrained: nothing');
  assert.deepEqual(ix.propose(toks, 5, 0, true), [6]);
  // Also where the suffix is jump-forward's template (`city":` forced): one token, not the value after it.
  assert.deepEqual(ix.propose(toks, 5, 2, true), [6]);
  assert.deepEqual(ix.propose([...toks, 6, 41, 5], 5, 0, true), [6]);
  // A longer match still proposes all it can.
  assert.deepEqual(ix.propose([...toks, 6, 40, 5], 5, 0, true), [6, 31, 8, 6, 40]);
  assert.deepEqual(new NgramIndex({ maxN: 4, minN: 2 }).propose([1, 2, 3], 5, 0, true), []);
});

test('the hashed index proposes what a scan of every earlier occurrence finds', () => {
  // The index keys n-grams by a 32-bit hash: over long sequences of a small vocabulary (many
  // repeats, many keys) its proposals equal those of the definition, read off by a scan.
  const scan = (toks: readonly number[], k: number, o: { maxN: number; minN: number }) => {
    const L = toks.length;
    for (let n = Math.min(o.maxN, L - 1); n >= o.minN; n--) {
      for (let end = L - 1; end >= n; end--) {
        let same = true;
        for (let i = 0; i < n && same; i++) same = toks[end - n + i] === toks[L - n + i];
        if (same) return toks.slice(end, Math.min(end + k, L));
      }
    }
    return [];
  };
  let seed = 12345;
  const rand = (m: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % m;
  for (const o of [NGRAM_DEFAULTS, { maxN: 3, minN: 1 }, { maxN: 6, minN: 3 }]) {
    for (const vocab of [3, 7, 50_000]) {
      const ix = new NgramIndex(o);
      const toks: number[] = [];
      let hits = 0;
      // A large vocabulary repeats only where the text copies itself: runs copied from earlier.
      let copyFrom = -1;
      for (let i = 0; i < 1500; i++) {
        if (vocab > 100 && toks.length > 10 && copyFrom < 0 && rand(8) === 0)
          copyFrom = rand(toks.length - 8);
        toks.push(copyFrom >= 0 ? toks[copyFrom++] : rand(vocab));
        if (copyFrom >= 0 && rand(6) === 0) copyFrom = -1;
        const got = ix.propose(toks, 5);
        assert.deepEqual(
          got,
          scan(toks, 5, o),
          `${JSON.stringify(o)}, vocabulary ${vocab}, ${toks.length} tokens`,
        );
        if (got.length > 0) hits++;
      }
      assert.ok(hits > 0, 'some suffixes occurred before');
    }
  }
});
