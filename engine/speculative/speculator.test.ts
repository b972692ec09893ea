import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import type { Proposer } from './proposer.js';
import { Speculator } from './speculator.js';

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
