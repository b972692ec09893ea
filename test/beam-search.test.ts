/**
 * Beam search in the engine (engine/beam/beam-search.ts over the paged cache) against the float
 * reference: transformers' generate(num_beams=W) on the same weights (test/reference/beams.py)
 * gives the expected beams and scores. Also: every KV block is free afterwards, a search
 * cancelled midway frees every beam at once, the prefix cache serves the prompt to a second
 * search, and the request rules (beam search is deterministic; widths within best_of's bound).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { EngineError } from '../engine/errors.js';
import { loadEngine } from '../engine/load-engine.js';
import type { FinishEvent, GenerateEvent, SamplingParams } from '../engine/types.js';
import { ensureFixtures, pythonCommand } from './fixtures.js';

const fixture = ensureFixtures().find((f) => f.name === 'qwen3-f32')!;
let engine: EngineCore;
let prompt: number[];

before(async () => {
  engine = await loadEngine(fixture.path, {
    maxBatchSize: 16,
    maxPrefillTokens: 512,
    cacheBlockSize: 16,
    kvCacheBytes: 16 << 20,
    maxSeqLen: 256,
    threads: 2,
  });
  prompt = await engine.tokenize('The old lighthouse keeper climbed the stairs every evening to', false);
});
after(async () => {
  await engine?.close();
});

async function beams(
  params: SamplingParams,
  signal?: AbortSignal,
  ids: readonly number[] = prompt,
): Promise<FinishEvent[]> {
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(
    { prompt: { kind: 'tokens', ids }, params: { useBeamSearch: true, ignoreEos: true, ...params } },
    signal,
  ))
    events.push(ev);
  return events.filter((e): e is FinishEvent => e.type === 'finish').sort((a, b) => a.index - b.index);
}

async function allFree(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const s = await engine.status();
    if (s.running === 0 && s.waiting === 0 && s.freeBlocks === s.totalBlocks) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`blocks not freed: ${JSON.stringify(await engine.status())}`);
}

interface Case {
  readonly W: number;
  readonly n: number;
  readonly maxNew: number;
  readonly minNew?: number;
  readonly lp: number;
  readonly early: boolean | 'never';
  readonly ends: readonly number[];
}

function reference(cases: readonly Case[]): { sequences: number[][]; scores: number[] }[] {
  const jobs = cases.map((c) => ({
    model: fixture.path,
    ids: prompt,
    num_beams: c.W,
    num_return_sequences: c.n,
    max_new_tokens: c.maxNew,
    min_new_tokens: c.minNew ?? 0,
    length_penalty: c.lp,
    early_stopping: c.early,
    eos_token_id: c.ends,
  }));
  const out = execFileSync(pythonCommand(), [join(projectRoot(), 'test', 'reference', 'beams.py')], {
    input: JSON.stringify(jobs),
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  return JSON.parse(out) as { sequences: number[][]; scores: number[] }[];
}

test('the same beams and scores as transformers generate(num_beams) on the same weights', async (t) => {
  // A first search picks an end token the model actually reaches, so beams finish early too.
  const first = await beams({ bestOf: 3, n: 3, maxNewTokens: 8 });
  const end = first[0].tokenIds[2];
  const cases: Case[] = [
    { W: 3, n: 3, maxNew: 8, lp: 1, early: false, ends: [] },
    { W: 4, n: 2, maxNew: 10, lp: 1, early: false, ends: [end] },
    { W: 4, n: 4, maxNew: 10, lp: 0.7, early: true, ends: [end] },
    { W: 3, n: 2, maxNew: 9, minNew: 4, lp: 1.5, early: 'never', ends: [end] },
    { W: 2, n: 1, maxNew: 7, lp: -0.5, early: false, ends: [end] },
  ];
  const want = reference(cases);
  for (const [i, c] of cases.entries()) {
    const got = await beams({
      bestOf: c.W,
      n: c.n,
      maxNewTokens: c.maxNew,
      minTokens: c.minNew ?? 0,
      lengthPenalty: c.lp,
      earlyStopping: c.early,
      stopTokenIds: [...c.ends],
    });
    const label = JSON.stringify(c);
    assert.deepEqual(
      got.map((f) => f.tokenIds),
      want[i].sequences,
      label,
    );
    got.forEach((f, j) => {
      const score = f.cumulativeLogprob / f.tokenIds.length ** c.lp;
      assert.ok(
        Math.abs(score - want[i].scores[j]) < 2e-3,
        `${label} beam ${j}: ${score} vs ${want[i].scores[j]}`,
      );
      assert.equal(f.reason, c.ends.includes(f.tokenIds.at(-1)!) ? 'stop' : 'length');
    });
    t.diagnostic(`${label}: ${got.map((f) => f.tokenIds.length).join('/')} tokens`);
    await allFree();
  }
});

test('a search cancelled midway frees every beam at once', async () => {
  const abort = new AbortController();
  const run = beams({ bestOf: 4, n: 4, maxNewTokens: 200, earlyStopping: 'never' }, abort.signal);
  for (let i = 0; i < 500; i++) {
    if ((await engine.status()).running >= 4) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok((await engine.status()).running >= 4, 'four beams were running');
  abort.abort();
  const finished = await run;
  assert.ok(finished.every((f) => f.reason === 'cancelled'));
  await allFree();
});

test('a second search of the same prompt reuses its cached blocks and returns the same beams', async () => {
  const long = [...prompt, ...prompt, ...prompt]; // more than two 16-token blocks
  const a = await beams({ bestOf: 3, n: 2, maxNewTokens: 6 }, undefined, long);
  const b = await beams({ bestOf: 3, n: 2, maxNewTokens: 6 }, undefined, long);
  assert.deepEqual(
    b.map((f) => f.tokenIds),
    a.map((f) => f.tokenIds),
  );
  assert.ok(b[0].usage.cachedPromptTokens >= 16, `cached ${b[0].usage.cachedPromptTokens} prompt tokens`);
  await allFree();
});

test('beam search is deterministic: sampling parameters are refused, naming the field', async () => {
  for (const [params, field] of [
    [{ temperature: 0.7 }, 'params.temperature'],
    [{ topP: 0.9 }, 'params.top_p'],
    [{ topK: 5 }, 'params.top_k'],
    [{ earlyStopping: 'sometimes' as unknown as boolean }, 'params.early_stopping'],
  ] as const) {
    await assert.rejects(beams(params), (e: unknown) => e instanceof EngineError && e.field === field);
  }
  // temperature 0 (or do_sample false) is what beam search does anyway.
  assert.equal((await beams({ temperature: 0, bestOf: 2, n: 1, maxNewTokens: 2 })).length, 1);
  await allFree();
});
