/**
 * Beam search's choices against a literal port of Hugging Face's vectorized `_beam_search`
 * (transformers 5: top K = max(2, 1 + end tokens) × W continuations over all beams, finished
 * beams from the top W ranks scored by length, running beams the best W that do not end,
 * the early-stop heuristic), both driven by the same synthetic model: a deterministic
 * distribution over a small vocabulary for each token history. The engine-level comparison
 * with transformers' own generate() on a real model is test/beam-search.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BeamSearch, candidatesPerBeam, type BeamSearchOptions } from './beam-search.js';
import { Sequence, type SequenceSampling } from '../sequence.js';
import { GREEDY_SAMPLING } from '../testing/greedy-sampling.js';

const V = 40;
const sampling: SequenceSampling = GREEDY_SAMPLING;

/** A model: log-softmax over V for a history, from a hash of it (end tokens made likelier). */
function syntheticModel(salt: number, endBoost: number, ends: readonly number[]) {
  return (history: readonly number[]): Float64Array => {
    let h = 2166136261 ^ salt;
    for (const t of history) h = Math.imul(h ^ (t + 7), 16777619);
    const logits = new Float64Array(V);
    for (let v = 0; v < V; v++) {
      h = Math.imul(h ^ (v + 13), 16777619) >>> 0;
      logits[v] = ((h % 100003) / 100003) * 4 + (ends.includes(v) ? endBoost : 0);
    }
    const max = Math.max(...logits);
    const lse = max + Math.log(logits.reduce((s, x) => s + Math.exp(x - max), 0));
    return logits.map((x) => x - lse);
  };
}

interface Setup {
  W: number;
  n: number;
  maxNew: number;
  minNew: number;
  lp: number;
  early: boolean | 'never';
  ends: number[];
}

/** Hugging Face's algorithm, step for step (tensor operations written as loops). */
function huggingFace(model: (h: readonly number[]) => Float64Array, s: Setup) {
  const K = Math.max(2, 1 + s.ends.length) * s.W;
  let running = Array.from({ length: s.W }, (_, i) => ({
    tokens: [] as number[],
    score: i === 0 ? 0 : -1e9,
  }));
  let finished = Array.from({ length: s.W }, () => ({ tokens: [] as number[], score: -1e9, done: false }));
  let improvable = true;
  let cur = 0;
  for (;;) {
    const flat: { bi: number; v: number; acc: number; idx: number }[] = [];
    running.forEach((b, bi) => {
      const lps = model(b.tokens);
      if (cur < s.minNew) for (const e of s.ends) lps[e] = -Infinity;
      for (let v = 0; v < V; v++) flat.push({ bi, v, acc: b.score + lps[v], idx: bi * V + v });
    });
    const top = flat.sort((a, b) => b.acc - a.acc || a.idx - b.idx).slice(0, K);
    const seqs = top.map((c) => [...running[c.bi].tokens, c.v]);
    const hits = top.map((c) => s.ends.includes(c.v) || cur + 1 >= s.maxNew);
    const runLp = top.map((c, i) => c.acc + (hits[i] ? -1e9 : 0));
    const order = runLp
      .map((score, i) => ({ score, i }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, s.W);
    const nextRunning = order.map(({ score, i }) => ({ tokens: seqs[i], score }));
    const fullBefore = finished.every((f) => f.done);
    const candidates = top.map((c, i) => ({
      tokens: seqs[i],
      score:
        c.acc / (cur + 1) ** s.lp +
        (fullBefore && s.early === true ? -1e9 : 0) +
        (improvable ? 0 : -1e9) +
        (hits[i] && i < s.W ? 0 : -1e9),
      done: hits[i] && i < s.W,
    }));
    finished = [...finished, ...candidates]
      .map((f, i) => ({ ...f, i }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, s.W);
    running = nextRunning;
    cur++;
    const hypLen = s.early === 'never' && s.lp > 0 ? s.maxNew : cur;
    const best = running[0].score / hypLen ** s.lp;
    const worst = Math.min(...finished.map((f) => f.score));
    improvable = improvable && finished.some((f) => best > (f.done ? worst : -1e9));
    const openBeam = !(finished.every((f) => f.done) && s.early === true);
    const valid = !hits.every((h) => h);
    if (!(improvable && openBeam && valid)) break;
  }
  return finished.slice(0, s.n).map((f) => ({ tokens: f.tokens, score: f.score }));
}

/** Prism's BeamSearch over the same model, with real sequences forked as the engine does. */
function prism(model: (h: readonly number[]) => Float64Array, s: Setup) {
  const options: BeamSearchOptions = {
    width: s.W,
    lengthPenalty: s.lp,
    earlyStopping: s.early,
    maxNew: s.maxNew,
    minTokens: s.minNew,
    endTokens: new Set(s.ends),
    stopsAt: null,
    keepAlternatives: 0,
  };
  const first = new Sequence({ requestId: 'r', prompt: [1, 2, 3], sampling, arrival: 0 });
  first.beam = true;
  const search = new BeamSearch(options, first);
  const perBeam = candidatesPerBeam(options);
  let live = 0;
  for (let round = 0; !search.done; round++) {
    assert.ok(round <= s.maxNew, 'the search ends by the length limit');
    for (const seq of search.beams) {
      const lps = model(seq.tokens.slice(seq.promptLen));
      const top = [...lps.keys()].sort((a, b) => lps[b] - lps[a] || a - b).slice(0, perBeam);
      search.report(
        seq,
        top.map((token) => ({ token, logprob: lps[token] })),
      );
    }
    assert.ok(search.roundComplete);
    const step = search.advance((parent) => parent.forkBeam());
    for (const { seq, token } of step.continued) seq.tokens.push(token);
    live = search.beams.length;
    assert.ok(live <= s.W, 'never more than W live beams');
  }
  return search.results(s.n).map((p) => ({ tokens: [...p.tokens], cum: p.cum }));
}

function compare(s: Setup, salt: number, endBoost: number) {
  const model = syntheticModel(salt, endBoost, s.ends);
  const want = huggingFace(model, s);
  const got = prism(model, s);
  const label = JSON.stringify({ ...s, salt, endBoost });
  assert.equal(got.length, want.length, label);
  got.forEach((g, i) => {
    assert.deepEqual(g.tokens, want[i].tokens, `${label} beam ${i}`);
    assert.ok(Math.abs(g.cum / g.tokens.length ** s.lp - want[i].score) < 1e-9, `${label} score ${i}`);
  });
}

test('the same beams and scores as Hugging Face, over widths, length penalties and early stopping', () => {
  let cases = 0;
  for (const W of [1, 2, 3, 5]) {
    for (const lp of [1, 0, 2, -0.5]) {
      for (const early of [false, true, 'never'] as const) {
        for (const salt of [1, 2, 3]) {
          compare({ W, n: Math.min(W, 2), maxNew: 9, minNew: 0, lp, early, ends: [0] }, salt, 2.5);
          cases++;
        }
      }
    }
  }
  assert.equal(cases, 144);
});

test('end tokens that win early, several end tokens, min_tokens', () => {
  for (const salt of [4, 5, 6, 7]) {
    compare({ W: 3, n: 3, maxNew: 8, minNew: 0, lp: 1, early: false, ends: [0, 5] }, salt, 4);
    compare({ W: 3, n: 2, maxNew: 8, minNew: 3, lp: 1, early: true, ends: [0, 5] }, salt, 4);
    compare({ W: 4, n: 4, maxNew: 6, minNew: 5, lp: 0.5, early: 'never', ends: [0] }, salt, 6);
  }
});

test('a parent kept by two continuations is forked once per extra continuation; unused beams are dropped', () => {
  const options: BeamSearchOptions = {
    width: 3,
    lengthPenalty: 1,
    earlyStopping: false,
    maxNew: 5,
    minTokens: 0,
    endTokens: new Set([0]),
    stopsAt: null,
    keepAlternatives: 2,
  };
  const first = new Sequence({ requestId: 'r', prompt: [1], sampling, arrival: 0 });
  const search = new BeamSearch(options, first);
  search.report(first, [
    { token: 7, logprob: -0.1 },
    { token: 8, logprob: -0.2 },
    { token: 9, logprob: -0.3 },
  ]);
  const forks: Sequence[] = [];
  const step = search.advance((parent) => {
    const child = parent.forkBeam();
    forks.push(child);
    return child;
  });
  assert.equal(forks.length, 2, 'the first sequence goes on itself, twice forked');
  assert.deepEqual(
    step.continued.map((c) => c.token),
    [7, 8, 9],
  );
  assert.equal(step.continued[0].seq, first);
  assert.deepEqual(step.dropped, []);
  for (const { seq, token } of step.continued) seq.tokens.push(token);
  // Next round: only beam 7 is worth continuing; the other two are dropped.
  for (const seq of search.beams) {
    const best = seq === first;
    search.report(seq, [
      { token: 10, logprob: best ? -0.01 : -5 },
      { token: 11, logprob: best ? -0.02 : -5 },
      { token: 12, logprob: best ? -0.03 : -5 },
    ]);
  }
  const second = search.advance((parent) => parent.forkBeam());
  assert.equal(second.dropped.length, 2);
  assert.ok(!second.dropped.includes(first));
  // No beam has finished yet: a search cut here returns the best live ones, with the
  // alternatives kept for top logprobs (two per token).
  const [best] = search.results(1);
  assert.deepEqual(best.tokens, [7, 10]);
  assert.deepEqual(
    best.alternatives.map((a) => a.map((c) => c.token)),
    [
      [7, 8],
      [10, 11],
    ],
  );
});
