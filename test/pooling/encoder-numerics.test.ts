/**
 * Encoder numerics against a float32 reference of the same weights (sentence-transformers on
 * torch CPU; NomicBERT in torch: test/pooling/pooling_reference.py), on the very token ids the
 * reference ran, so these hold the model and the pooling, not the tokenizer:
 *
 * - the real all-MiniLM-L6-v2: cosine >= 0.999 on each of 100 inputs of mixed lengths and
 *   languages (test/pooling/sentences.ts), truncated at its 256 tokens;
 * - its GGUF twins (F16, Q8_0): no worse than llama.cpp (node-llama-cpp, same file, same ids)
 *   is against the same float model;
 * - each architecture's random-weight fixture (scripts/pooling_fixtures.py) and GGUF twin:
 *   cosine >= 0.999; the cross-encoders: the reference's order and scores within 1e-3.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import * as native from '../../native/native.js';
import { ensureFixtures, type Fixture } from '../fixtures.js';
import { cosine, poolingReferences, type PoolingReference } from './reference.js';
import { MIXED_SENTENCES } from './sentences.js';

let fixtures: Fixture[];
const path = (name: string): string => {
  const f = fixtures.find((x) => x.name === name);
  if (!f) throw new Error(`no fixture ${name}`);
  return f.path;
};

before(() => {
  fixtures = ensureFixtures();
});

/** Runs `ids` through an encoder in passes of at most 16 inputs; one Float32Array per input. */
async function runEncoder(
  model: string,
  ref: PoolingReference,
  output: 'pooled' | 'scores',
): Promise<Float32Array[]> {
  const enc = await native.loadEncoder(model);
  const ctx = native.createEncoderContext(enc, { maxBatchTokens: 16 * 512, maxSeqs: 16, threads: 2 });
  const width =
    output === 'pooled' ? native.encoderInfo(enc).pooledDim : native.encoderInfo(enc).labels.length;
  const rows: Float32Array[] = [];
  try {
    for (let start = 0; start < ref.ids.length; start += 16) {
      const ids = ref.ids.slice(start, start + 16);
      const types = ref.typeIds.slice(start, start + 16);
      const offsets = [0];
      for (const x of ids) offsets.push(offsets.at(-1)! + x.length);
      const out = await native.encode(ctx, {
        tokens: Int32Array.from(ids.flat()),
        tokenTypes: Int32Array.from(types.flat()),
        seqOffsets: Int32Array.from(offsets),
        output,
      });
      for (let s = 0; s < ids.length; s++) rows.push(out.slice(s * width, (s + 1) * width));
    }
  } finally {
    native.disposeEncoderContext(ctx);
    native.disposeEncoder(enc);
  }
  return rows;
}

function cosines(prism: readonly Float32Array[], ref: readonly number[][]): number[] {
  return prism.map((v, i) => cosine(v, ref[i]!));
}

const worst = (xs: readonly number[]): number => Math.min(...xs);
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

function report(label: string, cos: readonly number[]): void {
  process.stderr.write(
    `  ${label}: cosine min ${worst(cos).toFixed(6)} mean ${mean(cos).toFixed(6)} (n=${cos.length})\n`,
  );
}

let minilmRef: PoolingReference;

test('all-MiniLM-L6-v2: cosine >= 0.999 to sentence-transformers on 100 mixed inputs', async () => {
  [minilmRef] = poolingReferences([
    { kind: 'embed', model: path('all-minilm-l6-v2'), texts: MIXED_SENTENCES },
  ]);
  assert.equal(minilmRef!.ids.length, 100);
  // Inputs past max_seq_length (256) are cut there, special tokens included.
  assert.equal(Math.max(...minilmRef!.ids.map((x) => x.length)), 256);
  const cos = cosines(
    await runEncoder(path('all-minilm-l6-v2'), minilmRef!, 'pooled'),
    minilmRef!.embeddings!,
  );
  report('MiniLM F32 (safetensors)', cos);
  assert.ok(worst(cos) >= 0.999, `worst cosine ${worst(cos)}`);
});

let llama: Llama | undefined;
after(async () => {
  await llama?.dispose();
});

/** llama.cpp's embeddings of the same ids on the same GGUF (its own pooling and normalisation). */
async function llamaCppEmbeddings(model: string, ids: readonly number[][]): Promise<number[][]> {
  llama ??= await getLlama({
    gpu: false,
    build: 'never',
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
  });
  const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
  const ctx = await m.createEmbeddingContext({ contextSize: 512, batchSize: 512, threads: 2 });
  try {
    const out: number[][] = [];
    // llama.cpp adds [CLS] and [SEP] itself: hand it the ids between them.
    for (const x of ids) out.push([...(await ctx.getEmbeddingFor(x.slice(1, -1) as never)).vector]);
    return out;
  } finally {
    await ctx.dispose();
    await m.dispose();
  }
}

for (const type of ['f16', 'q8_0']) {
  test(`all-MiniLM-L6-v2 GGUF ${type.toUpperCase()}: as close to the float model as llama.cpp on the same file`, async () => {
    [minilmRef] = poolingReferences([
      { kind: 'embed', model: path('all-minilm-l6-v2'), texts: MIXED_SENTENCES },
    ]);
    const file = path(`all-minilm-l6-v2-${type}`);
    const prism = cosines(await runEncoder(file, minilmRef!, 'pooled'), minilmRef!.embeddings!);
    const cpp = cosines(
      (await llamaCppEmbeddings(file, minilmRef!.ids)).map((v) => Float32Array.from(v)),
      minilmRef!.embeddings!,
    );
    report(`MiniLM ${type.toUpperCase()} GGUF, Prism`, prism);
    report(`MiniLM ${type.toUpperCase()} GGUF, llama.cpp`, cpp);
    assert.ok(
      worst(prism) >= worst(cpp) - 1e-4,
      `Prism worst ${worst(prism)} vs llama.cpp worst ${worst(cpp)}`,
    );
    assert.ok(mean(prism) >= mean(cpp) - 1e-4, `Prism mean ${mean(prism)} vs llama.cpp mean ${mean(cpp)}`);
  });
}

const FIXTURE_TEXTS = MIXED_SENTENCES.filter((_, i) => i % 5 === 0);

for (const name of ['bert-cls', 'xlmr-embed']) {
  test(`${name}: cosine >= 0.999 to sentence-transformers, folder and GGUF twin`, async () => {
    const [ref] = poolingReferences([{ kind: 'embed', model: path(name), texts: FIXTURE_TEXTS }]);
    for (const model of [path(name), path(`${name}-f32`)]) {
      const cos = cosines(await runEncoder(model, ref!, 'pooled'), ref!.embeddings!);
      report(model.endsWith('.gguf') ? `${name} GGUF` : name, cos);
      assert.ok(worst(cos) >= 0.999, `${model}: worst cosine ${worst(cos)}`);
    }
  });
}

test('nomic-embed: cosine >= 0.999 to the torch NomicBERT, folder and GGUF twin', async () => {
  const [tokenized] = poolingReferences([{ kind: 'embed', model: path('bert-cls'), texts: FIXTURE_TEXTS }]);
  const [ref] = poolingReferences([{ kind: 'nomic', model: path('nomic-embed'), ids: tokenized!.ids }]);
  for (const model of [path('nomic-embed'), path('nomic-embed-f32')]) {
    const cos = cosines(await runEncoder(model, ref!, 'pooled'), ref!.embeddings!);
    report(model.endsWith('.gguf') ? 'nomic-embed GGUF' : 'nomic-embed', cos);
    assert.ok(worst(cos) >= 0.999, `${model}: worst cosine ${worst(cos)}`);
  }
});

const PAIRS: [string, string][] = [
  ['What is the capital of France?', 'Paris is the capital and largest city of France.'],
  ['What is the capital of France?', 'The Eiffel Tower was finished in 1889.'],
  ['What is the capital of France?', 'Berlin is the capital of Germany.'],
  ['how to bake bread', 'Mix flour, water, yeast and salt, knead, let it rise and bake at 230 °C.'],
  ['how to bake bread', 'Bread is a staple food prepared from a dough of flour and water.'],
  ['how to bake bread', 'The stock market closed higher on Friday.'],
  ['机器学习', '机器学习是人工智能的一个分支。'],
  ['machine learning', 'Le chat dort paisiblement sur le canapé.'],
];

for (const name of ['bert-cross', 'xlmr-cross']) {
  test(`${name}: the reference cross-encoder's order and scores within 1e-3`, async () => {
    const [ref] = poolingReferences([{ kind: 'score', model: path(name), pairs: PAIRS }]);
    const logits = (await runEncoder(path(name), ref!, 'scores')).map((v) => v[0]!);
    const scores = logits.map((x) => 1 / (1 + Math.exp(-x)));
    for (let i = 0; i < PAIRS.length; i++) {
      assert.ok(
        Math.abs(logits[i]! - ref!.logits![i]![0]!) < 1e-3,
        `pair ${i}: logit ${logits[i]} vs ${ref!.logits![i]![0]}`,
      );
      assert.ok(
        Math.abs(scores[i]! - ref!.scores![i]![0]!) < 1e-3,
        `pair ${i}: score ${scores[i]} vs ${ref!.scores![i]![0]}`,
      );
    }
    const order = (xs: readonly number[]): number[] => xs.map((_, i) => i).sort((a, b) => xs[b]! - xs[a]!);
    assert.deepEqual(order(scores), order(ref!.scores!.map((s) => s[0]!)));
    process.stderr.write(
      `  ${name}: max |score - reference| ${Math.max(...scores.map((s, i) => Math.abs(s - ref!.scores![i]![0]!))).toExponential(2)}\n`,
    );
  });
}
