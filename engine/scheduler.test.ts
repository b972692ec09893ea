import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from './block-manager.js';
import { NoKvPool } from './kv-pool.js';
import { Sequence, type SequenceSampling } from './sequence.js';
import { Scheduler, type SchedulerLimits } from './scheduler.js';
import { PagedKvSim } from './testing/paged-kv-sim.js';
import { buildStepPlan } from './step-plan.js';
import { GREEDY_SAMPLING } from './testing/greedy-sampling.js';

const greedy: SequenceSampling = GREEDY_SAMPLING;
const sampled = (seed: bigint): SequenceSampling => ({ ...greedy, temperature: 0.8, seed });
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => (from + i) % 997);

interface Setup {
  kvBlocks: number;
  blockSize: number;
  limits?: Partial<SchedulerLimits>;
  prefixCache?: boolean;
}

/** Runs sequences to `maxNew` tokens each; returns outputs by "requestId/index" and the scheduler. */
function drive(setup: Setup, seqs: Sequence[], maxNew: number, onStep?: (s: Scheduler, n: number) => void) {
  const limits = { maxBatchSize: 64, maxPrefillTokens: 64, maxPrefillBatchSize: 64, ...setup.limits };
  const bm = new BlockManager(setup.kvBlocks, setup.blockSize, setup.prefixCache ?? true);
  const all: Sequence[] = [...seqs];
  const sched = new Scheduler(limits, bm, (_p, c) => all.push(c));
  const sim = new PagedKvSim(setup.kvBlocks, setup.blockSize);
  for (const s of seqs) sched.add(s);
  let steps = 0;
  while (sched.hasWork) {
    const batch = sched.schedule();
    assert.ok(batch.numTokens <= limits.maxPrefillTokens, 'token budget');
    assert.ok(sched.running.length <= limits.maxBatchSize, 'batch size');
    assert.ok(
      batch.items.filter((i) => i.start < i.seq.tokens.length - 1).length <= limits.maxPrefillBatchSize,
      'prefill batch',
    );
    if (batch.items.length === 0) continue; // an admission that only forked
    const out = sim.run(buildStepPlan(batch, setup.blockSize));
    sched.postprocess(batch, out.tokens);
    for (const item of batch.items) if (item.sample && item.seq.numOutput >= maxNew) sched.finish(item.seq);
    onStep?.(sched, steps);
    steps++;
    assert.ok(steps < 10000, 'no progress');
  }
  assert.equal(bm.freeBlocks, setup.kvBlocks, 'every block returned');
  const out = new Map<string, number[]>();
  for (const s of all) out.set(`${s.requestId}/${s.index}`, s.tokens.slice(s.promptLen));
  return { out, sched, bm, steps };
}

function requests(
  count: number,
  sampling: (i: number) => SequenceSampling,
  promptLen = (i: number) => 6 + i,
) {
  return Array.from(
    { length: count },
    (_, i) =>
      new Sequence({
        requestId: `r${i}`,
        prompt: range(promptLen(i), i * 31),
        sampling: sampling(i),
        arrival: i,
      }),
  );
}

test('batched run equals one-by-one runs (greedy and seeded)', () => {
  const mk = () => requests(6, (i) => (i % 2 ? sampled(BigInt(100 + i)) : greedy));
  const together = drive({ kvBlocks: 64, blockSize: 4 }, mk(), 12).out;
  for (const s of mk()) {
    const alone = drive({ kvBlocks: 64, blockSize: 4 }, [s], 12).out;
    assert.deepEqual(alone.get(`${s.requestId}/0`), together.get(`${s.requestId}/0`));
  }
});

test('preemption with a tiny pool gives the same tokens as an unpreempted run', () => {
  const mk = () =>
    requests(
      5,
      (i) => (i % 2 ? sampled(BigInt(7 + i)) : greedy),
      (i) => 5 + 3 * i,
    );
  const big = drive({ kvBlocks: 200, blockSize: 4 }, mk(), 20);
  const tiny = drive({ kvBlocks: 12, blockSize: 4 }, mk(), 20); // one sequence needs up to 9 blocks
  assert.equal(big.sched.preemptions, 0);
  assert.ok(tiny.sched.preemptions > 0, 'the tiny pool must preempt');
  assert.deepEqual(tiny.out, big.out);
});

test('decode never stalls behind a long prompt: it is chunked under the token budget', () => {
  const short = new Sequence({ requestId: 'short', prompt: range(3), sampling: greedy, arrival: 0 });
  const long = new Sequence({ requestId: 'long', prompt: range(200, 50), sampling: greedy, arrival: 1 });
  const decodeSteps: number[] = [];
  drive({ kvBlocks: 80, blockSize: 4, limits: { maxPrefillTokens: 16 } }, [short, long], 30, (s, n) => {
    if (short.status === 'running' && short.numOutput > 0) decodeSteps.push(n);
  });
  // From its first token until it finished, the short request produced a token every step.
  const gaps = decodeSteps.slice(1).map((n, i) => n - decodeSteps[i]);
  assert.ok(
    gaps.every((g) => g === 1),
    `decode stalled: ${gaps}`,
  );
  assert.equal(long.numOutput, 30);
});

test('waiting requests are admitted in arrival order, at most maxBatchSize running', () => {
  const seqs = requests(10, () => greedy);
  const order: string[] = [];
  drive({ kvBlocks: 64, blockSize: 4, limits: { maxBatchSize: 3 } }, seqs, 4, (s) => {
    for (const q of s.running) if (!order.includes(q.requestId)) order.push(q.requestId);
  });
  assert.deepEqual(
    order,
    seqs.map((s) => s.requestId),
  );
});

test('maxPrefillBatchSize caps prefills per step', () => {
  const seqs = requests(8, () => greedy);
  const { steps } = drive({ kvBlocks: 64, blockSize: 4, limits: { maxPrefillBatchSize: 2 } }, seqs, 3);
  assert.ok(steps >= 4);
});

test('prefix cache: a repeated prompt reuses whole blocks and gives the same tokens', () => {
  const prompt = range(23, 400);
  const first = drive(
    { kvBlocks: 64, blockSize: 4 },
    [new Sequence({ requestId: 'a', prompt, sampling: greedy, arrival: 0 })],
    8,
  );
  const bm = new BlockManager(64, 4, true);
  const sched = new Scheduler({ maxBatchSize: 8, maxPrefillTokens: 64, maxPrefillBatchSize: 8 }, bm);
  const sim = new PagedKvSim(64, 4);
  const outs: number[][] = [];
  for (const id of ['cold', 'warm']) {
    const s = new Sequence({ requestId: id, prompt, sampling: greedy, arrival: 0 });
    sched.add(s);
    while (s.status !== 'finished') {
      const batch = sched.schedule();
      sched.postprocess(batch, sim.run(buildStepPlan(batch, 4)).tokens);
      if (s.numOutput >= 8) sched.finish(s);
    }
    outs.push(s.tokens.slice(s.promptLen));
    if (id === 'warm')
      assert.equal(s.cachedPromptTokens, 20); // 23 prompt tokens → 5 full blocks of 4
    else assert.equal(s.cachedPromptTokens, 0);
  }
  assert.deepEqual(outs[0], first.out.get('a/0'));
  assert.deepEqual(outs[1], outs[0]);
  assert.equal(bm.hits, 20);
});

test('best_of: one prefill, then forks with their own seeds that share the prompt blocks', () => {
  const parent = new Sequence({
    requestId: 'f',
    prompt: range(11, 3),
    sampling: sampled(42n),
    arrival: 0,
    forkInto: 3,
  });
  const { out, bm } = drive({ kvBlocks: 32, blockSize: 4, prefixCache: false }, [parent], 6);
  assert.equal(out.size, 3);
  const [a, b, c] = ['f/0', 'f/1', 'f/2'].map((k) => out.get(k)!);
  assert.notDeepEqual(a, b);
  assert.notDeepEqual(b, c);
  assert.equal(bm.freeBlocks, 32);
  // Each fork equals an independent run with seed 42 + index.
  for (let i = 0; i < 3; i++) {
    const alone = drive(
      { kvBlocks: 32, blockSize: 4 },
      [
        new Sequence({
          requestId: 'x',
          prompt: range(11, 3),
          sampling: sampled(42n + BigInt(i)),
          arrival: 0,
        }),
      ],
      6,
    ).out;
    assert.deepEqual(out.get(`f/${i}`), alone.get('x/0'));
  }
});

test('best_of forks survive preemption in a tiny pool', () => {
  const mk = () => [
    new Sequence({ requestId: 'f', prompt: range(9, 3), sampling: sampled(5n), arrival: 0, forkInto: 4 }),
    ...requests(2, () => greedy),
  ];
  const big = drive({ kvBlocks: 100, blockSize: 4 }, mk(), 16);
  const tiny = drive({ kvBlocks: 9, blockSize: 4 }, mk(), 16);
  assert.ok(tiny.sched.preemptions > 0);
  assert.deepEqual(tiny.out, big.out);
});

test('a step never holds more distinct adapters than slots, and adapters do not change the tokens', () => {
  const mk = () =>
    requests(7, () => greedy).map((s, i) => {
      s.adapterSlot = i < 6 ? i % 3 : -1; // three adapters and the base model
      return s;
    });
  const unlimited = drive({ kvBlocks: 64, blockSize: 4 }, mk(), 8).out;
  let maxSeen = 0;
  const limited = drive(
    { kvBlocks: 64, blockSize: 4, limits: { maxAdaptersPerStep: 2 } },
    mk(),
    8,
    (sched) => {
      const distinct = new Set(sched.running.filter((q) => q.adapterSlot >= 0).map((q) => q.adapterSlot));
      maxSeen = Math.max(maxSeen, distinct.size);
    },
  );
  assert.deepEqual(limited.out, unlimited);
  // Running sequences may span more adapters than a step takes; check the steps themselves.
  const bm = new BlockManager(64, 4, true);
  const sched = new Scheduler(
    { maxBatchSize: 64, maxPrefillTokens: 64, maxPrefillBatchSize: 64, maxAdaptersPerStep: 2 },
    bm,
  );
  for (const s of mk()) sched.add(s);
  for (let step = 0; step < 5; step++) {
    const batch = sched.schedule();
    const distinct = new Set(batch.items.map((i) => i.seq.adapterSlot).filter((x) => x >= 0));
    assert.ok(distinct.size <= 2, `step ${step} holds ${distinct.size} adapters`);
    const plan = buildStepPlan(batch, 4);
    assert.deepEqual(
      Array.from(plan.adapterSlots ?? []),
      batch.items.map((i) => i.seq.adapterSlot),
    );
    sched.postprocess(batch, new Int32Array(batch.items.length).fill(1));
  }
  assert.ok(maxSeen >= 1);
});

test('prefix cache: the same prompt under two adapter identities shares no block', () => {
  const bm = new BlockManager(32, 4, true);
  const prompt = range(13);
  const a = new Sequence({
    requestId: 'a',
    prompt,
    sampling: greedy,
    arrival: 0,
    cacheExtra: 'lora\0x\x001',
  });
  bm.admit(a, bm.findCachedPrefix(a));
  bm.allocate(a, prompt.length);
  a.numComputed = prompt.length;
  bm.registerFull(a);
  const sameAdapter = new Sequence({
    requestId: 'b',
    prompt,
    sampling: greedy,
    arrival: 0,
    cacheExtra: 'lora\0x\x001',
  });
  assert.equal(bm.findCachedPrefix(sameAdapter).blocks.length, 3);
  for (const extra of ['', 'lora\0y\x001', 'lora\0x\x002']) {
    assert.equal(
      bm.findCachedPrefix(
        new Sequence({ requestId: 'c', prompt, sampling: greedy, arrival: 0, cacheExtra: extra }),
      ).blocks.length,
      0,
      extra,
    );
  }
});

/** Steps `sched` until it has no work, finishing sequences at `maxNew`; `arrivals[step]` join before that step. */
function driveWithArrivals(
  sched: Scheduler,
  sim: PagedKvSim,
  blockSize: number,
  maxNew: number,
  arrivals: ReadonlyMap<number, Sequence>,
) {
  const finished: string[] = [];
  for (let n = 0; sched.hasWork || n < Math.max(...arrivals.keys()); n++) {
    const joining = arrivals.get(n);
    if (joining) sched.add(joining);
    const batch = sched.schedule();
    if (batch.items.length === 0) continue;
    sched.postprocess(batch, sim.run(buildStepPlan(batch, blockSize)).tokens);
    for (const item of batch.items)
      if (item.sample && item.seq.numOutput >= maxNew) {
        sched.finish(item.seq);
        finished.push(item.seq.requestId);
      }
    assert.ok(n < 10000, 'no progress');
  }
  return finished;
}

test('priority policy: waiting sequences are admitted by priority (lower first), ties by arrival', () => {
  const priorities = [2, 0, 1, 0, 2, 1];
  const mk = () =>
    priorities.map(
      (priority, i) =>
        new Sequence({ requestId: `r${i}`, prompt: range(5, i * 7), sampling: greedy, arrival: i, priority }),
    );
  const order: string[] = [];
  const limits = { maxBatchSize: 1, schedulingPolicy: 'priority' as const };
  drive({ kvBlocks: 64, blockSize: 4, limits }, mk(), 3, (s) => {
    for (const q of s.running) if (!order.includes(q.requestId)) order.push(q.requestId);
  });
  assert.deepEqual(order, ['r1', 'r3', 'r2', 'r5', 'r0', 'r4']);
  // First come, first served by default, whatever the priorities.
  const fcfs: string[] = [];
  drive({ kvBlocks: 64, blockSize: 4, limits: { maxBatchSize: 1 } }, mk(), 3, (s) => {
    for (const q of s.running) if (!fcfs.includes(q.requestId)) fcfs.push(q.requestId);
  });
  assert.deepEqual(fcfs, ['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
});

test('priority policy: a higher-priority arrival preempts a lower-priority running sequence (no slot, or a full pool), and the preempted one gives the same tokens', () => {
  const B = 4;
  const low = (id: string, arrival: number) =>
    new Sequence({ requestId: id, prompt: range(16, 3), sampling: sampled(11n), arrival, priority: 5 });
  const high = () =>
    new Sequence({ requestId: 'high', prompt: range(12, 90), sampling: greedy, arrival: 10, priority: 0 });
  const alone = drive({ kvBlocks: 64, blockSize: B }, [low('low', 0)], 12).out.get('low/0');
  for (const [what, limits, kvBlocks] of [
    ['no running slot', { maxBatchSize: 1 }, 64],
    // When 'high' arrives 'low' holds 6 of the 8 blocks; 'high' needs 3 for its prompt.
    ['a full pool', { maxBatchSize: 8 }, 8],
  ] as const) {
    const run = (policy: 'fcfs' | 'priority') => {
      const bm = new BlockManager(kvBlocks, B, true);
      const sched = new Scheduler(
        { maxPrefillTokens: 64, maxPrefillBatchSize: 64, ...limits, schedulingPolicy: policy },
        bm,
      );
      const l = low('low', 0);
      sched.add(l);
      const finished = driveWithArrivals(sched, new PagedKvSim(kvBlocks, B), B, 12, new Map([[6, high()]]));
      assert.equal(bm.freeBlocks, kvBlocks);
      return { finished, preemptions: sched.preemptions, tokens: l.tokens.slice(l.promptLen) };
    };
    const p = run('priority');
    assert.deepEqual(p.finished, ['high', 'low'], what);
    assert.ok(p.preemptions >= 1, what);
    assert.deepEqual(p.tokens, alone, `${what}: recomputed after preemption, the same tokens`);
    if (what === 'no running slot') {
      const f = run('fcfs');
      assert.deepEqual(f.finished, ['low', 'high'], 'fcfs: the later arrival waits');
      assert.equal(f.preemptions, 0);
    }
  }
  // An equal priority never preempts (no thrashing): it waits its turn.
  const bm = new BlockManager(64, B, true);
  const sched = new Scheduler(
    { maxBatchSize: 1, maxPrefillTokens: 64, maxPrefillBatchSize: 64, schedulingPolicy: 'priority' },
    bm,
  );
  sched.add(low('first', 0));
  const same = new Sequence({
    requestId: 'second',
    prompt: range(8),
    sampling: greedy,
    arrival: 10,
    priority: 5,
  });
  assert.deepEqual(driveWithArrivals(sched, new PagedKvSim(64, B), B, 12, new Map([[6, same]])), [
    'first',
    'second',
  ]);
  assert.equal(sched.preemptions, 0);
});

test('a model without KV (an encoder) admits by token budget and batch size alone, and never chunks a prompt', () => {
  const limits = { maxBatchSize: 4, maxPrefillTokens: 32, maxPrefillBatchSize: 4, wholePrompts: true };
  const sched = new Scheduler(limits, new NoKvPool(1));
  const seq = (id: string, n: number, priority = 0, arrival = 0) =>
    new Sequence({ requestId: id, prompt: range(n), sampling: greedy, arrival, priority, wholePrompt: true });
  // Five short prompts: four fit the batch (no blocks asked for), the fifth waits for the next step.
  for (let i = 0; i < 5; i++) sched.add(seq(`s${i}`, 6, 0, i));
  let batch = sched.schedule();
  assert.deepEqual(
    batch.items.map((i) => [i.seq.requestId, i.start, i.numNew]),
    ['s0', 's1', 's2', 's3'].map((id) => [id, 0, 6]),
  );
  for (const { seq: s } of batch.items) sched.finish(s);
  // A prompt longer than what the step has left is not chunked: it waits, and then runs alone and whole.
  sched.add(seq('long', 30, 0, 10));
  batch = sched.schedule();
  assert.deepEqual(
    batch.items.map((i) => [i.seq.requestId, i.numNew]),
    [['s4', 6]],
  );
  sched.finish(batch.items[0]!.seq);
  batch = sched.schedule();
  assert.deepEqual(
    batch.items.map((i) => [i.seq.requestId, i.start, i.numNew]),
    [['long', 0, 30]],
  );
  assert.equal(sched.blocks.freeBlocks, 0);
  assert.equal(batch.items[0]!.seq.blockTable.length, 0, 'no blocks held');
});

test("a prefill chunk never ends inside an image's bidirectional span, and each step names the spans it completes", () => {
  // A 60-token prompt with images at [10, 26) and [30, 46) under a 16-token budget: without the
  // rule the chunks would end at 16 and 32, inside both spans.
  const bidirectional = Int32Array.from([10, 26, 30, 46]);
  const seq = new Sequence({ requestId: 'img', prompt: range(60), sampling: greedy, arrival: 0 });
  seq.placed = { positions: new Int32Array(0), rows: new Float32Array(0), hidden: 8, bidirectional };
  const sched = new Scheduler(
    { maxBatchSize: 4, maxPrefillTokens: 16, maxPrefillBatchSize: 4 },
    new BlockManager(40, 4, false),
    () => {},
  );
  sched.add(seq);
  const chunks: [number, number][] = [];
  const named: number[][] = [];
  while (seq.numComputed < seq.promptLen) {
    const batch = sched.schedule();
    const item = batch.items[0]!;
    chunks.push([item.start, item.start + item.numNew]);
    const plan = buildStepPlan(batch, 4);
    named.push(plan.bidirectionalSpans ? [...plan.bidirectionalSpans] : []);
    sched.postprocess(batch, Int32Array.from([1]));
  }
  assert.deepEqual(chunks, [
    [0, 10],
    [10, 26],
    [26, 30],
    [30, 46],
    [46, 60],
  ]);
  assert.deepEqual(named, [[], [10, 26], [], [30, 46], []]);
});
