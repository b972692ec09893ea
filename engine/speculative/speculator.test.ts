import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import type { Proposer } from './proposer.js';
import { allocateDrafts } from './adaptive-k.js';
import { Speculator, timedStepTokens } from './speculator.js';
import { StepCostEstimate } from './step-cost.js';

/** A free proposer that always proposes token 7 (never what the model samples, token 1). */
const wrong: Proposer = {
  method: 'ngram',
  costly: false,
  propose: (asks) => asks.map(({ k }) => Array.from({ length: k }, () => 7)),
  release() {},
  close() {},
};

const sequence = () =>
  ({
    status: 'running',
    aborted: false,
    numPending: 1,
    forkInto: 1,
    draft: null,
    grammar: null,
  }) as unknown as Sequence;

/** One step of `seqs`: propose, then the sampler's token 1 for each (nothing accepted). */
function step(s: Speculator, seqs: Sequence[]): number {
  s.propose(seqs);
  const sent = seqs.reduce((n, q) => n + (q.draft?.tokens.length ?? 0), 0);
  const batch = {
    items: seqs.map((seq) => ({ seq, start: 0, numNew: 1, sample: true, draft: seq.draft?.tokens })),
  } as unknown as ScheduledBatch;
  s.verified(batch, {
    tokens: Int32Array.from(seqs, () => 1),
    numAccepted: Int32Array.from(seqs, () => 0),
  } as StepOutput);
  return sent;
}

test('a new sequence starts from the acceptance recent sequences achieved: open-ended chat stops sending first drafts', () => {
  const s = new Speculator(
    wrong,
    { numSpeculativeTokens: 4, cost: { perToken: 0.2, knee: 48 } },
    { room: () => 100 },
  );
  // The first sequence starts from the 0.6 prior and sends a draft before it learns.
  assert.ok(step(s, [sequence()]) > 0);
  const sentBy: number[] = [];
  for (let r = 0; r < 20; r++) {
    const seq = sequence();
    let n = 0;
    for (let i = 0; i < 8; i++) n += step(s, [seq]);
    sentBy.push(n);
  }
  // Each later sequence inherits the refusals (and the missed shadow proposals) of the
  // earlier ones: after a couple of sequences none sends a draft.
  assert.deepEqual(
    sentBy.slice(2),
    sentBy.slice(2).map(() => 0),
    `drafts sent per sequence: ${sentBy}`,
  );
  // With the fixed prior, every new sequence sent its first draft again.
  const fixed = new Speculator(
    wrong,
    { numSpeculativeTokens: 4, cost: { perToken: 0.2, knee: 48 }, priorAcceptance: 0.6 },
    { room: () => 100 },
  );
  let sent = 0;
  for (let r = 0; r < 20; r++) sent += step(fixed, [sequence()]) > 0 ? 1 : 0;
  assert.equal(sent, 20);
});

test("after grounded requests, open-ended ones that record little do not start from the copies' acceptance", () => {
  // Grounded sequences propose at every step and have every draft accepted; open-ended ones
  // find something to propose at one step in eight, and it is refused.
  let grounded = true;
  let calls = 0;
  const sometimes: Proposer = {
    method: 'ngram',
    costly: false,
    propose: (asks) =>
      asks.map(({ k }) => (grounded || ++calls % 8 === 0 ? Array.from({ length: k }, () => 7) : [])),
    release() {},
    close() {},
  };
  const s = new Speculator(
    sometimes,
    { numSpeculativeTokens: 4, cost: { perToken: 0.2, knee: 48 } },
    { room: () => 100 },
  );
  const run = (seq: Sequence) => {
    s.propose([seq]);
    const d = seq.draft?.tokens ?? [];
    const batch = {
      items: [{ seq, start: 0, numNew: 1, sample: true, draft: d }],
    } as unknown as ScheduledBatch;
    s.verified(batch, {
      tokens: Int32Array.from([grounded ? 7 : 1]),
      numAccepted: Int32Array.from([grounded ? d.length : 0]),
    } as StepOutput);
    return d.length;
  };
  const request = () => {
    const seq = sequence();
    let sent = 0;
    for (let i = 0; i < 16; i++) sent += run(seq);
    s.release(seq); // the engine releases every finished sequence
    return sent;
  };
  for (let r = 0; r < 20; r++) request();
  grounded = false;
  const sentBy = Array.from({ length: 20 }, request);
  // The first open-ended requests pay for a first proposal each; then their own votes (one
  // per finished sequence) bring the prior down, though they recorded only two outcomes each
  // against the grounded requests' 320.
  assert.ok(sentBy[0] > 0, `the first open-ended request still drafts: ${sentBy}`);
  assert.deepEqual(
    sentBy.slice(4),
    sentBy.slice(4).map(() => 0),
    `drafts sent per open-ended request: ${sentBy}`,
  );
});

test("a free proposer's draft check (structured output) counts in the step's learned cost", async () => {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  const right: Proposer = {
    ...wrong,
    propose: (asks) => asks.map(({ k }) => Array.from({ length: k }, () => 1)),
  };
  let room = 0;
  // The grammar check takes 3 ms per draft token; the step itself next to nothing.
  const s = new Speculator(
    right,
    { numSpeculativeTokens: 4, fixedK: true },
    {
      room: () => room,
      checkDrafts: async (seqs) => busy(3 * seqs.reduce((n, q) => n + (q.draft?.tokens.length ?? 0), 0)),
    },
  );
  for (let i = 0; i < 16; i++) {
    room = i % 2 ? 4 : 0; // steps of 1 and of 1 + 4 tokens
    const seq = { ...sequence(), grammar: {} } as unknown as Sequence;
    await s.propose([seq]);
    const k = seq.draft?.tokens.length ?? 0;
    const batch = { items: [{ seq, start: 0, numNew: 1, sample: true, draft: seq.draft?.tokens }] };
    s.verified(
      batch as unknown as ScheduledBatch,
      { tokens: Int32Array.of(1), numAccepted: Int32Array.of(k) } as StepOutput,
    );
  }
  const c = s.costCurve(1);
  // 1 + 4 tokens took ≥ 12 ms, 1 token next to nothing: the curve charges each draft token its check.
  assert.ok(c(5) / c(1) > 3, `c(5)/c(1) = ${c(5) / c(1)}`);
});

test('the learned cost line takes decode/verify steps only: jump-forward and prefill positions do not set what a draft token costs', () => {
  const item = (numNew: number, draft = 0) => ({
    seq: sequence(),
    start: 0,
    numNew,
    sample: true,
    draft: draft > 0 ? Array.from({ length: draft }, () => 1) : undefined,
  });
  const batch = (items: ReturnType<typeof item>[]) => ({ items }) as unknown as ScheduledBatch;
  const decode = batch(Array.from({ length: 16 }, () => item(1)));
  const verify = batch(Array.from({ length: 16 }, () => item(1, 1)));
  // 12 sequences decode, 4 compute the 2 tokens jump-forward appended after their last one.
  const forced = batch([
    ...Array.from({ length: 12 }, () => item(1)),
    ...Array.from({ length: 4 }, () => item(3)),
  ]);
  assert.equal(timedStepTokens(decode), 16);
  assert.equal(timedStepTokens(verify), 32);
  assert.equal(timedStepTokens(forced), null);
  assert.equal(timedStepTokens(batch([item(1), item(9)])), null, 'a prefill chunk');

  // JSON extraction at 16 sequences on the development CPU (step times the engine saw, load
  // ~2): 16 tokens 95 ms; jump-forward steps (forced tokens: no logits row, no sample) of
  // 12 + 4 × 3 tokens 121 ms and 4 + 12 × 3 tokens 194 ms; 16 × (1 + 1) tokens 196 ms.
  const forcedMost = batch([
    ...Array.from({ length: 4 }, () => item(1)),
    ...Array.from({ length: 12 }, () => item(3)),
  ]);
  const steps: [ScheduledBatch, number][] = [
    [decode, 95],
    [forced, 121],
    [decode, 95],
    [forcedMost, 194],
    [verify, 196],
  ];
  const drafts = (tokensOf: (b: ScheduledBatch) => number | null) => {
    const e = new StepCostEstimate({ perToken: 0.1, knee: 48 });
    for (let i = 0; i < 40; i++) {
      const [b, ms] = steps[i % steps.length];
      const t = tokensOf(b);
      if (t !== null) e.record(16, t, ms);
    }
    const k = allocateDrafts(
      Array.from({ length: 16 }, () => ({ alpha: 0.95, max: 5 })),
      16,
      16,
      e.curve(16),
      0.2,
    );
    return k.reduce((a, b) => a + b, 0);
  };
  // Drafts accepted 95% of the time. On decode/verify steps a draft token costs about what a
  // sequence's own token does: none pays.
  assert.equal(drafts(timedStepTokens), 0);
  // The earlier rule took every step without a prefill chunk over 16 tokens: the cheap
  // forced tokens flattened the line, and the batch drafted.
  const everyStep = (b: ScheduledBatch) =>
    b.items.reduce((n, it) => n + it.numNew + ((it.draft as number[] | undefined)?.length ?? 0), 0);
  assert.ok(drafts(everyStep) >= 16, `drafts sent on the mixed line: ${drafts(everyStep)}`);
});

test("jump-forward's forced tokens count as the step's output, not only as its cost", () => {
  const right: Proposer = {
    ...wrong,
    propose: (asks) => asks.map(({ k }) => Array.from({ length: k }, () => 1)),
  };
  // The decode/verify line JSON extraction learned at 16 sequences (~7 ms + 5.1 ms a token),
  // relative to a 1-token step; drafts accepted 80% of the time.
  const s = new Speculator(
    right,
    { numSpeculativeTokens: 5, cost: { perToken: 0.42, knee: 1000 }, priorAcceptance: 0.8 },
    { room: () => 100 },
  );
  // 12 sequences decode; 4 compute the two tokens jump-forward appended, then sample.
  const seqs = Array.from(
    { length: 16 },
    (_, i) => ({ ...sequence(), numPending: i < 12 ? 1 : 3 }) as Sequence,
  );
  s.propose(seqs);
  const sent = seqs.reduce((n, q) => n + (q.draft?.tokens.length ?? 0), 0);
  // The step yields 24 tokens for the cost of 24: a draft token (5.1 ms, worth 0.8 × 0.9)
  // makes less per ms than the step does. Counting 16 outputs for the 24 tokens' cost, the
  // earlier rule saw a step that made 16 tokens for the cost of 24 and sent 16 drafts.
  assert.equal(sent, 0);
});

test('a sequence whose pending tokens hold jump-forward ones tells the proposer how many were forced', () => {
  const forced: (number | undefined)[] = [];
  const recording: Proposer = {
    method: 'ngram',
    costly: false,
    propose: (asks) => asks.map((a) => (forced.push(a.forced), [])),
    release() {},
    close() {},
  };
  const s = new Speculator(recording, { numSpeculativeTokens: 4 }, { room: () => 100 });
  // A sample and three forced tokens after it; a plain decoding sequence.
  s.propose([{ ...sequence(), numPending: 4 } as Sequence, sequence()]);
  assert.deepEqual(forced, [3, 0]);
});

test('with no queue, no drafts while a prompt is in prefill; with requests waiting for a slot, the old rule', () => {
  const right: Proposer = {
    ...wrong,
    propose: (asks) => asks.map(({ k }) => Array.from({ length: k }, () => 1)),
  };
  const make = () =>
    new Speculator(
      right,
      { numSpeculativeTokens: 4, cost: { perToken: 0.05, knee: 1000 }, priorAcceptance: 0.9 },
      { room: () => 100, slots: 2 },
    );
  const sent = (s: Speculator, seqs: Sequence[], queued = 0) => {
    s.propose(seqs, queued);
    return seqs.reduce((n, q) => n + (q.draft?.tokens.length ?? 0), 0);
  };
  const decoding = () => sequence();
  const prefilling = () => ({ ...sequence(), numPending: 40 }) as Sequence;
  // Alone, or beside another sequence that drafts as well: drafts.
  assert.ok(sent(make(), [decoding()]) > 0);
  assert.ok(sent(make(), [decoding(), decoding()]) > 0);
  // Beside a prompt still in prefill (running, or waiting with a slot free): none.
  assert.equal(sent(make(), [decoding(), prefilling()]), 0);
  assert.equal(sent(make(), [decoding()], 1), 0);
  // Requests wait for a slot (2 slots, both taken): a sequence that finishes early lets one
  // in, and the throughput rule sends drafts beside the prefill.
  assert.ok(sent(make(), [decoding(), prefilling()], 1) > 0);
});
