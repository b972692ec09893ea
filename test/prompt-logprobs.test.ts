/**
 * Prompt logprobs through the engine (engine/prompt-logprobs/): with the default model they
 * equal what teacher forcing through the normal decode path gives (a greedy continuation's
 * own logprobs, each from a one-token decode step, read back as prompt positions of a
 * prefill chunked across several steps); on a float fixture they equal transformers' (the
 * float reference of the same weights, test/reference/logits.py). The prefix cache is bypassed
 * for such a request (a repeated prompt is scored whole again) while its blocks still serve
 * other requests; max_new_tokens 0 scores the prompt alone; the refusals name their field.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { FinishEvent, GenerateEvent, GenerateRequest, PromptTokenLogprob } from '../engine/types.js';
import { fixture } from './fixtures.js';
import { referenceLogits } from './reference/reference.js';

let engine: EngineCore;

before(async () => {
  // Prefill chunks of 24 tokens over blocks of 16: a prompt's rows come from several steps.
  engine = await loadEngine(ensureDefaultModel(), {
    maxBatchSize: 4,
    maxPrefillTokens: 24,
    cacheBlockSize: 16,
    kvCacheBytes: 32 << 20,
    maxSeqLen: 512,
    threads: 2,
  });
});
after(async () => {
  await engine?.close();
});

async function run(e: EngineCore, request: GenerateRequest): Promise<FinishEvent> {
  const events: GenerateEvent[] = [];
  for await (const ev of e.generate(request)) events.push(ev);
  const finish = events.find((ev): ev is FinishEvent => ev.type === 'finish');
  assert.ok(finish);
  return finish;
}

const TEXT = 'The old lighthouse keeper climbed the winding stairs every evening to light the lamp, and';

test('equal to teacher forcing through the decode path, the prompt scored alone with max_new_tokens 0', async () => {
  const ids = await engine.tokenize(TEXT, false);
  // One greedy continuation: each token from a one-token decode step, with its logprob.
  const decoded: number[] = [];
  let greedy: FinishEvent | undefined;
  for await (const ev of engine.generate({
    prompt: { kind: 'tokens', ids },
    params: { temperature: 0, maxNewTokens: 12, ignoreEos: true, logprobs: true },
  })) {
    if (ev.type === 'token') decoded.push(...(ev.logprobs ?? []).map((l) => l.logprob));
    else greedy = ev;
  }
  assert.ok(greedy);
  assert.equal(greedy.tokenIds.length, 12);
  assert.equal(decoded.length, 12);
  const all = [...ids, ...greedy.tokenIds];
  const scored = await run(engine, {
    prompt: { kind: 'tokens', ids: all },
    params: { maxNewTokens: 0, promptLogprobs: 3 },
  });
  assert.equal(scored.reason, 'length');
  assert.deepEqual(scored.tokenIds, []);
  assert.equal(scored.usage.completionTokens, 0);
  const lps = scored.promptLogprobs!;
  assert.equal(lps.length, all.length);
  assert.deepEqual(
    lps.map((l) => l.tokenId),
    all,
  );
  assert.equal(lps[0].logprob, null);
  assert.ok(lps.slice(1).every((l) => typeof l.logprob === 'number' && l.top.length === 3));
  let worst = 0;
  greedy.tokenIds.forEach((token, i) => {
    const l = lps[ids.length + i];
    worst = Math.max(worst, Math.abs(l.logprob! - decoded[i]));
    // Greedy: each generated token is the most likely one at its position.
    assert.equal(l.rank, 1, `rank of generated token ${i}`);
    assert.equal(l.top[0].tokenId, token);
  });
  console.log(
    `# prompt logprobs vs decode-path logprobs: max |diff| ${worst.toExponential(2)} over 12 tokens`,
  );
  assert.ok(worst < 2e-2, `max |prompt - decode| logprob ${worst}`);
});

test('the prefix cache is bypassed for a scored prompt, and its blocks serve other requests', async () => {
  const ids = await engine.tokenize(`${TEXT} ${TEXT}`, false);
  const ask: GenerateRequest = {
    prompt: { kind: 'tokens', ids },
    params: { maxNewTokens: 1, promptLogprobs: 0 },
  };
  const first = await run(engine, ask);
  const again = await run(engine, ask);
  assert.equal(again.usage.cachedPromptTokens, 0, 'computed whole again');
  const values = (l: readonly PromptTokenLogprob[]) => l.map((x) => x.logprob);
  assert.deepEqual(values(again.promptLogprobs!), values(first.promptLogprobs!));
  const plain = await run(engine, { prompt: { kind: 'tokens', ids }, params: { maxNewTokens: 1 } });
  assert.ok(plain.usage.cachedPromptTokens >= 16, `cached ${plain.usage.cachedPromptTokens}`);
  assert.equal(plain.promptLogprobs, undefined);
});

test('refusals name their field', async () => {
  await assert.rejects(
    run(engine, { prompt: { kind: 'text', text: 'x' }, params: { maxNewTokens: 0 } }),
    /max_new_tokens.*0 only with prompt logprobs/,
  );
  await assert.rejects(
    run(engine, { prompt: { kind: 'text', text: 'x' }, params: { promptLogprobs: 21 } }),
    /prompt_logprobs/,
  );
  await assert.rejects(
    run(engine, {
      prompt: { kind: 'text', text: 'x' },
      params: { promptLogprobs: 0 },
      kvTransfer: { kind: 'remoteDecode' },
    }),
    /kv_transfer/,
  );
});

test('equal to the float reference (transformers) on a float fixture', async () => {
  const f = fixture('qwen2-tied-f32');
  const e = await loadEngine(f.path, {
    maxPrefillTokens: 40,
    cacheBlockSize: 16,
    kvCacheBytes: 8 << 20,
    threads: 2,
  });
  try {
    const ids = await e.tokenize(TEXT, false);
    const ref = referenceLogits([{ model: f.path, ids }])[0];
    const scored = await run(e, {
      prompt: { kind: 'tokens', ids },
      params: { maxNewTokens: 0, promptLogprobs: 1 },
    });
    const lps = scored.promptLogprobs!;
    // Error relative to the logprob's size: this random-weight model's logprobs are tens of
    // nats (its logits spread wide), and the F16 KV cache rounds them as it rounds the logits.
    let worst = 0;
    let worstAbs = 0;
    for (let p = 1; p < ids.length; p++) {
      const row = ref.rows(p - 1, 1);
      let max = -Infinity;
      for (const x of row) max = Math.max(max, x);
      let sum = 0;
      for (const x of row) sum += Math.exp(x - max);
      const want = row[ids[p]] - max - Math.log(sum);
      const diff = Math.abs(lps[p].logprob! - want);
      worstAbs = Math.max(worstAbs, diff);
      worst = Math.max(worst, diff / Math.max(1, Math.abs(want)));
    }
    console.log(
      `# prompt logprobs vs transformers (${f.name}): max |diff| ${worstAbs.toExponential(2)}, ` +
        `relative ${worst.toExponential(2)} over ${ids.length - 1} tokens`,
    );
    assert.ok(worst < 5e-4, `max |prism - transformers| / max(1, |logprob|) ${worst}`);
  } finally {
    await e.close();
  }
});
