/**
 * The priority scheduling policy end to end on the real default model: a request of a higher
 * priority (lower value) is admitted ahead of the ones queued before it, and preempts a
 * lower-priority running request when no slot is free or the KV pool is full; the preempted
 * request is recomputed and gives the same tokens as alone. (Under fcfs a priority is refused:
 * test/gateways-openai.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import type { FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';

const model = ensureDefaultModel();

const request = (id: string, text: string, maxNewTokens: number, priority: number): GenerateRequest => ({
  requestId: id,
  prompt: { kind: 'text', text },
  params: { temperature: 0, maxNewTokens, ignoreEos: true, priority },
});

async function drain(events: AsyncIterator<GenerateEvent>, onToken?: () => void): Promise<FinishEvent> {
  for (;;) {
    const { value, done } = await events.next();
    assert.ok(!done, 'the stream ended without a finish event');
    if (value.type === 'token') onToken?.();
    if (value.type === 'finish') return value;
  }
}

/** Starts `first`, waits for `tokensFirst` of its tokens, then submits `later` at once; returns finish order and tokens. */
async function scenario(
  options: EngineOptions,
  first: GenerateRequest,
  tokensFirst: number,
  later: readonly GenerateRequest[],
) {
  const engine: EngineCore = await loadEngine(model, { threads: 2, prefixCache: false, ...options });
  try {
    const finished: string[] = [];
    const firstTokens: string[] = [];
    const it = engine.generate(first)[Symbol.asyncIterator]();
    let seen = 0;
    let release!: () => void;
    const started = new Promise<void>((r) => (release = r));
    const track = (id: string, events: AsyncIterator<GenerateEvent>, onToken?: () => void) =>
      drain(events, onToken).then((f) => {
        finished.push(id);
        return f;
      });
    const firstDone = track(first.requestId!, it, () => ++seen === tokensFirst && release());
    await started;
    const rest = later.map((r) => {
      let got = false;
      return track(r.requestId!, engine.generate(r)[Symbol.asyncIterator](), () => {
        if (!got) firstTokens.push(r.requestId!);
        got = true;
      });
    });
    const finishes = await Promise.all([firstDone, ...rest]);
    const preemptions = (await engine.status()).preemptions;
    const alone = await drain(engine.generate({ ...first, requestId: 'alone' })[Symbol.asyncIterator]());
    return { finished, firstTokens, preemptions, firstOutput: finishes[0]!.tokenIds, alone: alone.tokenIds };
  } finally {
    await engine.close();
  }
}

test('priority: a higher-priority request goes ahead of queued ones and preempts for a slot', async () => {
  const r = await scenario(
    { schedulingPolicy: 'priority', maxBatchSize: 1, maxSeqLen: 256 },
    request('low', 'Once upon a time, in a small village,', 16, 1),
    2,
    [
      request('queued-1', 'The capital of France is', 4, 1),
      request('queued-2', 'My favourite fruit is', 4, 1),
      request('high', 'Water boils at a temperature of', 4, 0),
    ],
  );
  assert.deepEqual(r.firstTokens, ['high', 'queued-1', 'queued-2']);
  assert.deepEqual(r.finished, ['high', 'low', 'queued-1', 'queued-2']);
  assert.ok(r.preemptions >= 1);
  assert.deepEqual(r.firstOutput, r.alone, 'recomputed after preemption: the same tokens');
});

test('priority: a higher-priority request preempts a lower-priority one when the KV pool is full', async () => {
  // 6 blocks of 8 tokens; 'low' (~10 + 30 tokens) holds 4 when 'high' arrives needing 4 for its ~25.
  const r = await scenario(
    { schedulingPolicy: 'priority', maxBatchSize: 4, cacheBlockSize: 8, kvBlocks: 6, maxSeqLen: 48 },
    request('low', 'Once upon a time, in a small village,', 30, 3),
    20,
    [
      request(
        'high',
        'The three primary colors are red, yellow and blue; the three secondary colors, which mix them, are',
        4,
        -1,
      ),
    ],
  );
  assert.deepEqual(r.finished, ['high', 'low']);
  assert.ok(r.preemptions >= 1, 'the full pool must make room by preempting');
  assert.deepEqual(r.firstOutput, r.alone);
});
