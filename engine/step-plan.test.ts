import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sequence } from './sequence.js';
import { buildStepPlan, lateMaskBuffer, lateMaskSources } from './step-plan.js';
import { SequenceGrammar } from './structured/grammar-service.js';

const sampling = {
  temperature: 0.5,
  topK: 40,
  topP: 0.9,
  repetitionPenalty: 1.1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: 7n,
  topLogprobs: 2,
};

test('CSR layout: a prefill chunk and a decode token in one plan', () => {
  const a = new Sequence({
    requestId: 'a',
    prompt: [1, 2, 3, 4, 5, 6],
    sampling: { ...sampling, repetitionPenalty: 1 },
    arrival: 0,
  });
  a.blockTable = [9, 4];
  const b = new Sequence({ requestId: 'b', prompt: [7, 8, 9], sampling, arrival: 0, outputs: [10, 11] });
  b.blockTable = [2, 3];
  b.numComputed = 4;
  const plan = buildStepPlan(
    {
      items: [
        { seq: a, start: 2, numNew: 3, sample: false },
        { seq: b, start: 4, numNew: 1, sample: true },
      ],
      copies: [{ src: [1], dst: [3] }],
      numTokens: 4,
    },
    4,
  );
  assert.deepEqual([...plan.tokens], [3, 4, 5, 11]);
  assert.deepEqual([...plan.positions], [2, 3, 4, 4]);
  assert.deepEqual([...plan.seqTokenOffsets], [0, 3, 4]);
  assert.deepEqual([...plan.blockTableOffsets], [0, 2, 4]);
  assert.deepEqual([...plan.blockTables], [9, 4, 2, 3]);
  assert.deepEqual([...(plan.blockCopies ?? [])], [1, 3]);
  assert.deepEqual([...plan.sample], [0, 1]);
  assert.deepEqual([...plan.sampleCounters], [0, 2]);
  assert.deepEqual([...plan.seeds], [7n, 7n]);
  assert.deepEqual([...plan.topLogprobs], [-1, 2]);
  // Only b has a penalty: its history is prompt + generated up to the step's last token.
  assert.deepEqual([...plan.penaltyTokenOffsets], [0, 0, 5]);
  assert.deepEqual([...plan.penaltyTokens], [7, 8, 9, 10, 11]);
  assert.deepEqual([...plan.allowedMaskRows], [-1, -1]);
});

test('late masks: rows named in the plan, filled later from the matchers taken at build time', () => {
  const mk = (id: string, block: number) => {
    const s = new Sequence({ requestId: id, prompt: [1, 2], sampling, arrival: 0 });
    s.blockTable = [block];
    s.numComputed = 1;
    return s;
  };
  const a = mk('a', 0);
  const b = mk('b', 1);
  const c = mk('c', 2);
  const d = mk('d', 3);
  const grammar = (key: string) => new SequenceGrammar(0, key);
  a.grammar = grammar('a');
  c.grammar = grammar('c');
  d.grammar = grammar('d'); // constrained but not sampling this step: no row
  const batch = {
    items: [
      { seq: a, start: 1, numNew: 1, sample: true },
      { seq: b, start: 1, numNew: 1, sample: true },
      { seq: c, start: 1, numNew: 1, sample: true },
      { seq: d, start: 0, numNew: 1, sample: false },
    ],
    copies: [],
    numTokens: 4,
  };
  const plan = buildStepPlan(batch, 4, true);
  assert.equal(plan.lateMaskRows, 2);
  assert.equal(plan.allowedMask.length, 0);
  assert.deepEqual([...plan.allowedMaskRows], [0, -1, 1, -1]);
  const sources = lateMaskSources(batch);
  a.grammar = null; // cancelled while the step runs: its row is still filled
  (sources[1] as SequenceGrammar).mask = Int32Array.from([5, 6]);
  // a has no mask (its grammar failed): all allowed; c's mask as computed.
  assert.deepEqual([...lateMaskBuffer(sources, 2)], [-1, -1, 5, 6]);
  // Without late masks nothing changes: no lateMaskRows, rows only for masks already there.
  const eager = buildStepPlan(batch, 4);
  assert.equal(eager.lateMaskRows, undefined);
});

test('logit bias (CSR), min-p and typical-p are in the plan only when a sampling sequence uses them; bad words are suppressed after their prefix', () => {
  const seq = (id: string, extra: object, outputs: number[] = []) => {
    const s = new Sequence({
      requestId: id,
      prompt: [1, 2],
      sampling: { ...sampling, ...extra },
      arrival: 0,
      outputs,
    });
    s.blockTable = [0];
    s.numComputed = s.tokens.length - 1;
    return s;
  };
  const item = (s: Sequence) => ({ seq: s, start: s.numComputed, numNew: 1, sample: true });
  const plain = buildStepPlan({ items: [item(seq('p', {}))], copies: [], numTokens: 1 }, 4);
  for (const f of ['logitBiasOffsets', 'minP', 'typicalP', 'suppressTokens'] as const)
    assert.equal(plain[f], undefined, f);
  const bias = { tokens: Int32Array.from([5, 6]), values: Float32Array.from([1, -100]) };
  const plan = buildStepPlan(
    {
      items: [
        item(seq('a', { logitBias: bias, minP: 0.1 })),
        item(seq('b', { typicalP: 0.9, badWords: [[8], [3, 4]] }, [9, 3])),
        item(seq('c', { badWords: [[3, 4]] }, [9])),
      ],
      copies: [],
      numTokens: 3,
    },
    4,
  );
  assert.deepEqual([...plan.logitBiasOffsets!], [0, 2, 2, 2]);
  assert.deepEqual([...plan.logitBiasTokens!], [5, 6]);
  assert.deepEqual([...plan.logitBiasValues!], [1, -100]);
  assert.deepEqual([...plan.minP!], [Math.fround(0.1), 0, 0]);
  assert.deepEqual([...plan.typicalP!], [1, Math.fround(0.9), 1]);
  // b's output ends with 3: the second word's last token is banned too; c's does not.
  assert.deepEqual([...plan.suppressTokenOffsets!], [0, 0, 2, 2]);
  assert.deepEqual([...plan.suppressTokens!], [8, 4]);
});
