import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineCore } from './engine-core.js';
import { EngineError } from './errors.js';
import { resolveEngineOptions, type EngineOptions } from './options.js';
import { CharTokenizer } from './testing/char-tokenizer.js';
import { PagedKvSim } from './testing/paged-kv-sim.js';
import type { EngineInfo, FinishEvent, GenerateEvent, GenerateRequest } from './types.js';

function engine(opts: EngineOptions = {}, kvBlocks = 64, blockSize = 4, tokenizer = new CharTokenizer()) {
  const options = resolveEngineOptions({
    cacheBlockSize: blockSize,
    maxSeqLen: 200,
    maxInputTokenLen: 100,
    kvBlocks,
    ...opts,
  });
  const sim = new PagedKvSim(kvBlocks, blockSize, 100);
  const info = { modelName: 'sim' } as EngineInfo;
  return {
    core: new EngineCore({
      runner: sim,
      tokenizer,
      options,
      info,
      chatTemplate: opts.chatTemplatePath,
    }),
    sim,
  };
}

async function collect(it: AsyncIterable<GenerateEvent>) {
  const events: GenerateEvent[] = [];
  for await (const e of it) events.push(e);
  const finishes = events.filter((e): e is FinishEvent => e.type === 'finish');
  const streamed = new Map<number, string>();
  for (const e of events)
    if (e.type === 'token') streamed.set(e.index, (streamed.get(e.index) ?? '') + e.text);
  return { events, finishes, streamed };
}

const req = (text: string, params: GenerateRequest['params'] = {}, requestId?: string): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, ignoreEos: true, maxNewTokens: 24, ...params },
  ...(requestId ? { requestId } : {}),
});

async function rejects(it: AsyncIterable<GenerateEvent>, code: string, pattern: RegExp) {
  await assert.rejects(
    collect(it),
    (e: unknown) => e instanceof EngineError && e.code === code && pattern.test(e.message),
  );
}

test('streamed deltas add up to the final text; usage and timings are reported', async () => {
  const { core } = engine();
  const { finishes, streamed, events } = await collect(core.generate(req('hello world')));
  assert.equal(finishes.length, 1);
  const f = finishes[0];
  assert.equal(f.reason, 'length');
  assert.equal(f.tokenIds.length, 24);
  assert.equal(streamed.get(0), f.text);
  assert.equal(f.text.length, 24 - f.tokenIds.filter((t) => t >= 95).length);
  assert.equal(f.usage.promptTokens, 12);
  assert.equal(f.usage.completionTokens, 24);
  assert.ok(f.timings.ttftMs >= 0 && f.timings.decodeMs >= 0);
  assert.equal(events.filter((e) => e.type === 'token').length, 24);
  const st = await core.status();
  assert.equal(st.generationTokens, 24);
  assert.equal(st.ttft.count, 1);
  assert.equal(st.interTokenLatency.count, 23);
  assert.equal(st.freeBlocks, st.totalBlocks);
  await core.close();
});

test('concurrent greedy requests give the same text as one by one', async () => {
  const { core } = engine();
  const prompts = ['alpha', 'beta gamma', 'delta', 'epsilon zeta eta', 'theta'];
  const alone: string[] = [];
  for (const p of prompts) alone.push((await collect(core.generate(req(p)))).finishes[0].text);
  const together = await Promise.all(prompts.map((p) => collect(core.generate(req(p)))));
  assert.deepEqual(
    together.map((r) => r.finishes[0].text),
    alone,
  );
  await core.close();
});

test('a stop string ends the sequence and never leaks into the stream', async () => {
  const { core } = engine();
  const full = (await collect(core.generate(req('stop me')))).finishes[0].text;
  const stop = full.slice(8, 11);
  const at = full.indexOf(stop);
  const r = await collect(core.generate(req('stop me', { stop: ['zzzzzzzz', stop] })));
  const f = r.finishes[0];
  assert.equal(f.reason, 'stop');
  assert.equal(f.text, full.slice(0, at));
  assert.equal(r.streamed.get(0), full.slice(0, at));
  const inc = await collect(core.generate(req('stop me', { stop: [stop], includeStopStrInOutput: true })));
  assert.equal(inc.finishes[0].text, full.slice(0, at + stop.length));
  await core.close();
});

test('EOS and stop_token_ids stop unless ignore_eos', async () => {
  const { core } = engine();
  const full = (await collect(core.generate(req('abc')))).finishes[0];
  const stopId = full.tokenIds[5];
  const f = (await collect(core.generate(req('abc', { stopTokenIds: [stopId] })))).finishes[0];
  assert.equal(f.reason, 'stop');
  assert.equal(f.tokenIds.length, full.tokenIds.indexOf(stopId) + 1);
  await core.close();
});

test('cancel() frees the blocks within one step and ends the stream as cancelled', async () => {
  const { core, sim } = engine();
  sim.delayMs = 5;
  const it = core.generate(req('a long one', { maxNewTokens: 150 }), undefined);
  const events: GenerateEvent[] = [];
  for await (const e of it) {
    events.push(e);
    if (events.length === 3) assert.equal(await core.cancel(events[0].requestId), true);
  }
  const last = events[events.length - 1] as FinishEvent;
  assert.equal(last.type, 'finish');
  assert.equal(last.reason, 'cancelled');
  await new Promise((r) => setTimeout(r, 30)); // one step
  const st = await core.status();
  assert.equal(st.freeBlocks, st.totalBlocks);
  assert.equal(st.running, 0);
  assert.equal(await core.cancel('no-such-request'), false);
  await core.close();
});

test('an AbortSignal and a consumer that stops reading both cancel', async () => {
  const { core, sim } = engine();
  sim.delayMs = 5;
  const ac = new AbortController();
  const it = core.generate(req('signal', { maxNewTokens: 150 }), ac.signal);
  setTimeout(() => ac.abort(), 20);
  const { finishes } = await collect(it);
  assert.equal(finishes[0].reason, 'cancelled');
  for await (const e of core.generate(req('walk away', { maxNewTokens: 150 }))) {
    if (e.type === 'token') break;
  }
  await new Promise((r) => setTimeout(r, 30));
  const st = await core.status();
  assert.equal(st.freeBlocks, st.totalBlocks);
  assert.equal(st.running + st.waiting, 0);
  await core.close();
});

test('a full waiting queue answers RESOURCE_EXHAUSTED (server is overloaded)', async () => {
  const { core, sim } = engine({ maxBatchSize: 1, maxQueueSize: 2 });
  sim.delayMs = 2;
  const live = [core.generate(req('one')), core.generate(req('two')), core.generate(req('three'))];
  await rejects(core.generate(req('four')), 'RESOURCE_EXHAUSTED', /overloaded/);
  for (const it of live) assert.equal((await collect(it)).finishes[0].reason, 'length');
  await core.close();
});

test('drain(): new requests get UNAVAILABLE, live ones finish, then it resolves', async () => {
  const { core } = engine();
  const live = collect(core.generate(req('draining')));
  const drained = core.drain();
  await rejects(core.generate(req('late')), 'UNAVAILABLE', /stopping/);
  await drained;
  assert.equal((await live).finishes[0].reason, 'length');
  assert.equal((await core.status()).stopping, true);
  await core.close();
});

test('malformed requests are INVALID_ARGUMENT naming the field and rule', async () => {
  const { core } = engine();
  const cases: [GenerateRequest['params'], RegExp][] = [
    [{ topP: 1.5 }, /params\.top_p: must be in \(0, 1\]/],
    [{ temperature: -1 }, /params\.temperature: must be >= 0/],
    [{ maxNewTokens: 0 }, /params\.max_new_tokens/],
    [{ topK: 1.5 }, /params\.top_k: must be an integer/],
    [{ n: 3, bestOf: 2 }, /params\.best_of: must be >= n/],
    [{ stop: [''] }, /params\.stop\[0\]/],
    [{ stopTokenIds: [1000] }, /params\.stop_token_ids\[0\]/],
    [{ seed: -4 }, /params\.seed/],
    [{ presencePenalty: 3 }, /params\.presence_penalty/],
    [{ doSample: 'yes' as unknown as boolean }, /params\.do_sample: must be a boolean/],
  ];
  for (const [params, pattern] of cases) {
    await rejects(
      core.generate({ prompt: { kind: 'text', text: 'x' }, params }),
      'INVALID_ARGUMENT',
      pattern,
    );
  }
  await rejects(
    core.generate({ prompt: { kind: 'tokens', ids: [1, 2, 400] }, params: {} }),
    'INVALID_ARGUMENT',
    /prompt\.ids\[2\]/,
  );
  await rejects(
    core.generate({ prompt: { kind: 'tokens', ids: [] }, params: {} }),
    'INVALID_ARGUMENT',
    /prompt: must not be empty/,
  );
  await rejects(
    core.generate({
      prompt: { kind: 'chat', messages: [{ role: 'robot', content: 'x' }] } as never,
      params: {},
    }),
    'INVALID_ARGUMENT',
    /prompt\.messages\[0\]\.role/,
  );
  await rejects(
    core.generate({ prompt: { kind: 'image' } as never, params: {} }),
    'INVALID_ARGUMENT',
    /prompt\.kind/,
  );
  const live = core.generate(req('dup', {}, 'same-id'));
  await rejects(core.generate(req('dup', {}, 'same-id')), 'INVALID_ARGUMENT', /request_id/);
  await collect(live);
  await core.close();
});

test('over-long prompts: error naming the limit and numbers, or truncation', async () => {
  const long = 'x'.repeat(150); // 151 tokens with BOS
  const { core } = engine();
  await rejects(
    core.generate(req(long)),
    'INVALID_ARGUMENT',
    /151 tokens, more than maxInputTokenLen \(100\)/,
  );
  const truncated = (await collect(core.generate(req(long, { truncate: 50 })))).finishes[0];
  assert.equal(truncated.usage.promptTokens, 50);
  await core.close();
  for (const truncation of [-1, 1] as const) {
    const { core: c } = engine({ truncation });
    const f = (await collect(c.generate(req(long)))).finishes[0];
    assert.equal(f.usage.promptTokens, 100);
    await c.close();
  }
  // Output is capped so prompt + output <= maxSeqLen (200): 100 prompt tokens → 100 new at most.
  const { core: c2 } = engine({ truncation: 1, maxIterTimes: 150 });
  const f2 = (await collect(c2.generate(req(long, { maxNewTokens: 150 })))).finishes[0];
  assert.equal(f2.tokenIds.length, 100);
  assert.equal(f2.reason, 'length');
  await c2.close();
});

test('n and best_of: copies share the prompt; best_of > n returns the n best', async () => {
  const { core } = engine();
  const params = { temperature: 0.9, seed: 11, maxNewTokens: 10 };
  const two = await collect(core.generate(req('fork me', { ...params, n: 2 })));
  assert.deepEqual(two.finishes.map((f) => f.index).sort(), [0, 1]);
  assert.deepEqual(two.finishes.map((f) => f.seed).sort(), [11, 12]);
  assert.notEqual(two.finishes[0].text, two.finishes[1].text);
  for (const f of two.finishes) assert.equal(two.streamed.get(f.index), f.text);
  const best = await collect(core.generate(req('fork me', { ...params, n: 1, bestOf: 3 })));
  assert.equal(best.finishes.length, 1);
  const all = await collect(core.generate(req('fork me', { ...params, n: 3 })));
  const top = Math.max(...all.finishes.map((f) => f.cumulativeLogprob));
  assert.equal(best.finishes[0].cumulativeLogprob, top);
  const st = await core.status();
  assert.equal(st.freeBlocks, st.totalBlocks);
  await core.close();
});

test('the same seed gives the same sampled text alone and in a busy batch', async () => {
  const { core } = engine();
  const seeded = req('seeded', { temperature: 0.7, seed: 1234 });
  const alone = (await collect(core.generate(seeded))).finishes[0].text;
  const busy = await Promise.all([
    collect(core.generate(req('noise one', { temperature: 1, seed: 1 }))),
    collect(core.generate(seeded)),
    collect(core.generate(req('noise two'))),
  ]);
  assert.equal(busy[1].finishes[0].text, alone);
  await core.close();
});

test('prefix cache: the warm request reports cached tokens and the same text', async () => {
  const { core } = engine();
  const prompt = 'a shared system prompt, then a question';
  const cold = (await collect(core.generate(req(prompt)))).finishes[0];
  const warm = (await collect(core.generate(req(prompt)))).finishes[0];
  assert.equal(cold.usage.cachedPromptTokens, 0);
  assert.equal(warm.usage.cachedPromptTokens, 36); // 40 tokens: the last is computed → 9 full blocks of 4
  assert.equal(warm.text, cold.text);
  const st = await core.status();
  assert.equal(st.prefixCacheHits, 36);
  assert.equal(st.prefixCacheQueries, 80);
  await core.close();
});

test('preemption in a tiny pool: same outputs, counted in status', async () => {
  const prompts = ['first prompt', 'second prompt!', 'third prompt here', 'fourth'];
  const run = async (kvBlocks: number) => {
    const { core } = engine({ maxSeqLen: 60, maxInputTokenLen: 30, prefixCache: false }, kvBlocks);
    const r = await Promise.all(
      prompts.map((p, i) =>
        collect(core.generate(req(p, { maxNewTokens: 40, temperature: i % 2 ? 0.8 : 0, seed: i }))),
      ),
    );
    const st = await core.status();
    await core.close();
    return { texts: r.map((x) => x.finishes[0].text), preemptions: st.preemptions };
  };
  const big = await run(200);
  const tiny = await run(16);
  assert.equal(big.preemptions, 0);
  assert.ok(tiny.preemptions > 0);
  assert.deepEqual(tiny.texts, big.texts);
});

test('chat prompts use the template; template errors are INVALID_ARGUMENT', async () => {
  const { core } = engine();
  assert.equal(await core.applyChatTemplate([{ role: 'user', content: 'hi' }]), '[user]hi[assistant]');
  const f = (
    await collect(
      core.generate({
        prompt: { kind: 'chat', messages: [{ role: 'user', content: 'hi' }] },
        params: { maxNewTokens: 3 },
      }),
    )
  ).finishes[0];
  assert.equal(f.usage.promptTokens, '[user]hi[assistant]'.length);
  await core.close();
  const { core: broken } = engine({ chatTemplatePath: 'broken' });
  await rejects(
    broken.generate({ prompt: { kind: 'chat', messages: [{ role: 'user', content: 'hi' }] }, params: {} }),
    'INVALID_ARGUMENT',
    /chat template failed/,
  );
  await broken.close();
});

test('a failing step fails its requests with an INTERNAL error; the engine keeps serving', async () => {
  const { core, sim } = engine();
  sim.failNext = 'native exploded';
  await rejects(core.generate(req('boom')), 'INTERNAL', /model step .* failed \(native exploded\)/);
  assert.equal((await collect(core.generate(req('fine')))).finishes[0].reason, 'length');
  const st = await core.status();
  assert.equal(st.requestsFailed, 1);
  assert.equal(st.freeBlocks, st.totalBlocks);
  await core.close();
});

test('tokenize / detokenize', async () => {
  const { core } = engine();
  assert.deepEqual(await core.tokenize('ab', false), [65, 66]);
  assert.deepEqual(await core.detokenize([65, 66]), { text: 'ab', tokens: ['a', 'b'] });
  await assert.rejects(core.detokenize([1, -1]), /ids\[1\]/);
  await core.close();
});

test('an exception while post-processing fails those requests, not the process', async () => {
  class Throwing extends CharTokenizer {
    override createDetokenizer() {
      return {
        push: (): string => {
          throw new Error('detokenizer broke');
        },
        flush: () => '',
        text: '',
      };
    }
  }
  const { core } = engine({}, 64, 4, new Throwing());
  await rejects(core.generate(req('x')), 'INTERNAL', /detokenizer broke/);
  const st = await core.status();
  assert.equal(st.freeBlocks, st.totalBlocks);
  await core.close();
});

/** A CharTokenizer whose async encodes wait until `release()`: the prompt is "being tokenized". */
class HeldTokenizer extends CharTokenizer {
  private held: (() => void)[] = [];
  override async encodeAsync(text: string, options: { addSpecialTokens?: boolean } = {}): Promise<number[]> {
    await new Promise<void>((resolve) => this.held.push(resolve));
    return this.encode(text, options);
  }
  get waiting(): number {
    return this.held.length;
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

function heldEngine() {
  const tokenizer = new HeldTokenizer();
  return { core: engine({}, 64, 4, tokenizer).core, tokenizer };
}

test('prompts are tokenized asynchronously; the id is claimed meanwhile and drain() waits', async () => {
  const { core, tokenizer } = heldEngine();
  const first = collect(core.generate(req('abc', { maxNewTokens: 3 }, 'held')));
  await new Promise((r) => setImmediate(r));
  assert.equal(tokenizer.waiting, 1);
  assert.equal((await core.status()).waiting + (await core.status()).running, 0);
  await rejects(core.generate(req('x', {}, 'held')), 'INVALID_ARGUMENT', /already in use/);
  let drained = false;
  const draining = core.drain().then(() => (drained = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(drained, false, 'drain() must wait for a request that is still being tokenized');
  tokenizer.release();
  const { finishes } = await first;
  assert.equal(finishes[0].reason, 'length');
  assert.equal(finishes[0].usage.completionTokens, 3);
  await draining;
  await core.close();
});

test('a stream abandoned while its prompt is tokenized never reaches the scheduler', async () => {
  const { core, tokenizer } = heldEngine();
  const it = core.generate(req('abc', {}, 'gone'))[Symbol.asyncIterator]();
  await new Promise((r) => setImmediate(r));
  assert.equal(tokenizer.waiting, 1);
  await it.return?.();
  tokenizer.release();
  await new Promise((r) => setImmediate(r));
  assert.equal((await core.status()).requestsReceived, 0);
  const status = await core.status();
  assert.equal(status.waiting + status.running, 0);
  // The id is free again.
  const again = collect(core.generate(req('abc', { maxNewTokens: 2 }, 'gone')));
  await new Promise((r) => setImmediate(r));
  tokenizer.release();
  assert.equal((await again).finishes[0].reason, 'length');
  await core.close();
});
