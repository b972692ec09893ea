/**
 * Numerical correctness: Prism's teacher-forced logits against a float32 reference of the
 * same weights (test/reference/logits.py: transformers + torch CPU), over 570 positions of
 * real text, for the default model and for every generated fixture (qwen2 tied/untied and
 * qwen3 in F32 and BF16 safetensors; llama GGUF in F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K,
 * Q6_K, and Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL, IQ4_XS quantized by llama.cpp's own
 * quantizer; Gemma 3, Mistral with a sliding window, Phi-3 with partial rotary and LongRoPE,
 * Qwen3-MoE and Mixtral as F32 safetensors, most also as GGUF files of the same weights; and
 * a Mistral with a 4,096-token window run on 6,000 token ids). Sliding windows are shorter
 * than the text, and a last test shows that the reference without them differs, so a model
 * that ignored its window would fail. Prism runs the text the way the scheduler would: prefill chunks of irregular
 * sizes (so chunks start mid-block on top of a cached prefix) and then single-token decode
 * steps, over block tables that the engine's block manager hands out (pages in reverse order;
 * behind a sliding window released pages are reused at once).
 *
 * Per model it prints strict top-1 agreement, the relative logit error ‖a−b‖/‖b‖ per
 * position (mean, max) and the max absolute error, and asserts:
 *  - strict top-1 agreement ≥ 99% on every model. (With int8 activations the default model
 *    managed ~97%, every flip a near-tie; the quantized kernels now take int16 activations
 *    in every linear layer — see native/src/kernels/kernels.h — and agree at 100%.)
 *  - mean relative logit error under a bound per model (about 6-8x what Prism measured),
 *    so a regression in precision shows up before it flips top-1 picks.
 */
import { greedySampling } from '../engine/step-plan.js';
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  type StepPlan,
} from '../native/native.js';
import { BlockManager, RELEASED, type KvSequence } from '../engine/block-manager.js';
import { minKvPages } from '../engine/kv-layout.js';
import { CORE_TYPE_FIXTURES, ensureFixtures, PLANE_TYPE_FIXTURES } from './fixtures.js';
import { referenceLogits, type ReferenceLogits } from './reference/reference.js';

const PASSAGE = readFileSync(join(projectRoot(), 'test', 'reference', 'passage.txt'), 'utf8');
const MAX_TOKENS = 570;
/** 512 prefill positions in chunks that are not all multiples of the block size. */
const PREFILL_CHUNKS = [128, 120, 128, 136];
const BLOCK_SIZE = 16;
const MIN_POSITIONS = 512;

/**
 * Bounds on the mean relative logit error, about 6x to 8x what Prism measured (see
 * docs/testing.md): ~1.2e-4 on every fixture (float weights: f32 activations; quantized
 * weights: int16 activations; both with an F16 KV cache), ~3.4e-4 on the 30-layer default
 * model. A real bug moves it by tens of percent.
 */
function relErrorBound(label: string): number {
  return label === 'default' ? 2e-3 : 1e-3;
}

/**
 * Mean relative logit error bounds of the int8 cases, about 2x what they measured (2.8e-2 on
 * the default model, 1.1e-2 on the fixtures; docs/testing.md): a layer bug moves it by 10%+.
 */
function int8RelErrorBound(label: string): number {
  return label === 'default' ? 5e-2 : 2e-2;
}

/** Strict top-1 floor: the 99%, on every model. */
const STRICT_TOP1_FLOOR = 0.99;

interface Case {
  readonly label: string;
  readonly path: string;
  readonly weightType: string;
  /** The model whose float reference this one is held to (a GGUF twin's folder), else its own. */
  readonly referencePath: string;
  /** Tokenize the passage with the default model (fixtures that share its vocabulary). */
  readonly defaultTokenizer: boolean;
}

interface Stats {
  positions: number;
  strictAgree: number;
  relSum: number;
  relMax: number;
  maxAbs: number;
  greedyChecked: number;
}

const cases: Case[] = [];
const refs = new Map<string, ReferenceLogits>();
const windowlessRefs = new Map<string, ReferenceLogits>();

/**
 * The target case: a Mistral-shaped model with a 4,096-token window given 6,000
 * tokens (random ids of its 512-token vocabulary), prefilled in 512-token chunks and decoded
 * one token at a time past position 5,632.
 */
const LONG_WINDOW = 'mistral-4k-window-f32';
const LONG_TOKENS = 6000;
const LONG_CHUNKS = [...Array<number>(11).fill(512)];

function longWindowIds(): number[] {
  let x = 12345;
  return Array.from({ length: LONG_TOKENS }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % 512;
  });
}

/**
 * Fixtures with sliding windows shorter than what they are run on (make-fixtures.py: 48 and
 * 64 tokens of the 570-token passage; 4,096 of 6,000 ids).
 */
const WINDOW_LABELS = ['gemma3-f32', 'mistral-window-f32', LONG_WINDOW];
const WINDOW_SIZES: Readonly<Record<string, number>> = {
  'gemma3-f32': 48,
  'mistral-window-f32': 64,
  [LONG_WINDOW]: 4096,
};
/** A reference config override that makes every layer attend to the whole passage. */
const WINDOW_OFF = { sliding_window: 1_000_000 };

before(() => {
  const defaultModel = ensureDefaultModel();
  cases.push({
    label: 'default',
    path: defaultModel,
    weightType: 'Q4_1',
    referencePath: defaultModel,
    defaultTokenizer: false,
  });
  const fixtures = ensureFixtures();
  // Generation models only: the pooling fixtures (task embed/score) have their own numerics
  // test (test/pooling/encoder-numerics.test.ts) against sentence-transformers. A vision
  // fixture's text model is one (its images' numerics are test/vision/'s).
  for (const f of fixtures.filter((x) => x.task === undefined || x.task === 'vision')) {
    const twin = f.reference === undefined ? f : fixtures.find((x) => x.name === f.reference);
    assert.ok(twin, `${f.name}: its reference fixture ${f.reference} is missing`);
    cases.push({
      label: f.name,
      path: f.path,
      weightType: f.weightType,
      referencePath: twin.path,
      // The GGUF fixtures and the folders without a tokenizer carry the default model's vocabulary.
      defaultTokenizer: f.format === 'gguf' || f.tokenizer === 'default',
    });
  }
  const jobs = cases.map((c) =>
    c.label === LONG_WINDOW
      ? { model: c.referencePath, ids: longWindowIds() }
      : {
          model: c.referencePath,
          text: PASSAGE,
          maxTokens: MAX_TOKENS,
          ...(c.defaultTokenizer ? { tokenizer: defaultModel } : {}),
        },
  );
  // The sliding-window fixtures once more with the window switched off in the reference: what a
  // model that ignored its window would compute (the window test below shows it differs).
  const windowless = WINDOW_LABELS.map((label) => {
    const c = cases.find((x) => x.label === label);
    assert.ok(c, `no fixture called ${label}`);
    return { ...jobs[cases.indexOf(c)], config: WINDOW_OFF };
  });
  const results = referenceLogits([...jobs, ...windowless]);
  cases.forEach((c, i) => refs.set(c.label, results[i]));
  WINDOW_LABELS.forEach((label, i) => windowlessRefs.set(label, results[cases.length + i]));
});

function argmax(row: Float32Array, offset: number, n: number): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = row[offset + i];
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/**
 * A single-sequence plan over ids[start, start+n), greedy-sampling its last token. `table` is
 * the sequence's block table (page ids, RELEASED behind a sliding window); page p is given to
 * the native side as kvPages-1-p, so attention has to follow the table.
 */
function plan(
  ids: Int32Array,
  start: number,
  n: number,
  table: readonly number[],
  kvPages: number,
): StepPlan {
  const entries = table.length;
  return {
    tokens: ids.slice(start, start + n),
    positions: Int32Array.from({ length: n }, (_, i) => start + i),
    seqTokenOffsets: Int32Array.of(0, n),
    blockTableOffsets: Int32Array.of(0, entries),
    blockTables: Int32Array.from(table, (p) => (p === RELEASED ? 0 : kvPages - 1 - p)),
    sample: Uint8Array.of(1),
    ...greedySampling(1),
    returnLogits: 'all',
  };
}

function compareRows(prism: Float32Array, ref: Float32Array, rows: number, vocab: number, s: Stats): void {
  for (let r = 0; r < rows; r++) {
    const o = r * vocab;
    let diff2 = 0;
    let ref2 = 0;
    for (let v = 0; v < vocab; v++) {
      const a = prism[o + v];
      const b = ref[o + v];
      const d = a - b;
      diff2 += d * d;
      ref2 += b * b;
      const ad = Math.abs(d);
      if (!(ad <= s.maxAbs)) s.maxAbs = ad; // NaN lands here too and poisons the max
    }
    const rel = Math.sqrt(diff2 / ref2);
    s.relSum += rel;
    s.relMax = Math.max(s.relMax, Number.isNaN(rel) ? Infinity : rel);
    const top = argmax(ref, o, vocab);
    const pick = argmax(prism, o, vocab);
    if (pick === top) s.strictAgree++;
    s.positions++;
  }
}

/**
 * Loads `c` with the model's own activation rule, or with PRISM_ACTIVATIONS forcing one
 * (read by the native loader while it prepares the weights), and checks what it chose.
 */
async function loadCase(c: Case, activations: 'auto' | 'int8' | 'int16') {
  const saved = process.env.PRISM_ACTIVATIONS;
  process.env.PRISM_ACTIVATIONS = activations;
  try {
    return await loadModel(c.path);
  } finally {
    if (saved === undefined) delete process.env.PRISM_ACTIVATIONS;
    else process.env.PRISM_ACTIVATIONS = saved;
  }
}

async function runTeacherForced(
  c: Case,
  ref: ReferenceLogits,
  activations: 'auto' | 'int8' | 'int16' = 'auto',
  prefillChunks: readonly number[] = PREFILL_CHUNKS,
): Promise<Stats> {
  const model = await loadCase(c, activations);
  const info = modelInfo(model);
  // Every model here is below hidden 1024, where the rule picks int16 (native/src/model.cc).
  assert.equal(
    info.activations,
    activations === 'auto' ? 'int16' : activations,
    `${c.label}: activation precision`,
  );
  assert.equal(info.vocabSize, ref.vocab, `${c.label}: vocab size vs the reference`);
  const total = ref.positions;
  assert.ok(total >= MIN_POSITIONS + 16, `${c.label}: only ${total} tokens of text`);
  // The pages come from the engine's block manager in the smallest pool that runs the text:
  // behind a sliding window it releases pages, and the next block reuses them at once (the
  // prefix cache is off, so freed pages go first), so attention that read outside the window
  // would read another block's K/V.
  const layout = info.kvLayout;
  const maxChunk = Math.max(...prefillChunks);
  const kvPages = minKvPages(layout, {
    maxSeqLen: total,
    cacheBlockSize: BLOCK_SIZE,
    maxPrefillTokens: maxChunk,
  });
  const blocks = new BlockManager(kvPages, BLOCK_SIZE, false, null, layout.groups);
  const seq: KvSequence = {
    tokens: Array.from(ref.ids),
    numComputed: 0,
    blockTable: [],
    blockKeys: [],
    cowPending: false,
    cacheExtra: '',
  };
  const ctx = createContext(model, {
    kvBlocks: kvPages,
    blockSize: BLOCK_SIZE,
    maxBatchTokens: Math.max(...prefillChunks),
    maxSeqs: 1,
  });
  const s: Stats = {
    positions: 0,
    strictAgree: 0,
    relSum: 0,
    relMax: 0,
    maxAbs: 0,
    greedyChecked: 0,
  };
  try {
    const chunks = [...prefillChunks];
    const prefilled = prefillChunks.reduce((a, b) => a + b, 0);
    for (let p = prefilled; p < total; p++) chunks.push(1); // the rest: decode steps
    let start = 0;
    for (const n of chunks) {
      blocks.allocate(seq, n);
      const result = await step(ctx, plan(ref.ids, start, n, seq.blockTable, kvPages));
      seq.numComputed += n;
      blocks.registerFull(seq);
      const logits = result.logits;
      assert.ok(logits, `${c.label}: step returned no logits although returnLogits = 'all'`);
      assert.equal(logits.length, n * ref.vocab, `${c.label}: logits length of a ${n}-token step`);
      // The greedy sample of the step's last token is the argmax of its returned logits.
      assert.equal(
        result.tokens[0],
        argmax(logits, (n - 1) * ref.vocab, ref.vocab),
        `${c.label}: greedy token`,
      );
      s.greedyChecked++;
      compareRows(logits, ref.rows(start, n), n, ref.vocab, s);
      start += n;
    }
  } finally {
    disposeContext(ctx);
    disposeModel(model);
  }
  return s;
}

/** Logs a run's agreement with the float reference and holds it to the floor and bound. */
function checkAgreement(
  label: string,
  weightType: string,
  activations: 'auto' | 'int8',
  s: Stats,
  floor: number,
  bound: number,
): void {
  const strict = s.strictAgree / s.positions;
  const relMean = s.relSum / s.positions;
  const tag = activations === 'int8' ? ' (int8)' : '';
  console.log(
    `numerics ${label.padEnd(18)} ${weightType.padEnd(5)} ${activations === 'int8' ? 'int8 ' : ''}positions=${s.positions} ` +
      `top1=${(strict * 100).toFixed(2)}% ` +
      `relErr mean=${relMean.toExponential(2)} max=${s.relMax.toExponential(2)} maxAbs=${s.maxAbs.toFixed(4)}`,
  );
  assert.ok(
    strict >= floor,
    `${label}${tag}: strict top-1 agreement ${(strict * 100).toFixed(2)}% < ${floor * 100}%`,
  );
  assert.ok(
    relMean <= bound,
    `${label}${tag}: mean relative logit error ${relMean.toExponential(2)} > ${bound}`,
  );
}

const LABELS = [
  'default',
  ...CORE_TYPE_FIXTURES,
  ...PLANE_TYPE_FIXTURES,
  // Architectures beyond llama/qwen (make-fixtures.py ARCH_SPECS); the GGUF files are held
  // to the float reference of the folder with the same weights.
  'gemma3-f32',
  'gemma3-gguf-f32',
  'gemma3-gguf-q8_0',
  'mistral-window-f32',
  'phi3-f32',
  'phi3-gguf-f32',
  'qwen3moe-f32',
  'qwen3moe-gguf-f32',
  'qwen3moe-gguf-q8_0',
  'mixtral-f32',
  'mixtral-gguf-f32',
  'mistral-window-gguf-f32',
  LONG_WINDOW,
  // SmolVLM's (Idefics3) text model, loaded from its vision-language folder.
  'smolvlm-tiny',
];

for (const label of LABELS) {
  test(`teacher-forced logits match the float reference: ${label}`, async () => {
    const c = cases.find((x) => x.label === label);
    assert.ok(c, `no model/fixture called ${label} (fixtures: ${cases.map((x) => x.label).join(', ')})`);
    const ref = refs.get(label)!;
    const s = await runTeacherForced(c, ref, 'auto', label === LONG_WINDOW ? LONG_CHUNKS : PREFILL_CHUNKS);
    assert.equal(s.positions, ref.positions);
    checkAgreement(label, c.weightType, 'auto', s, STRICT_TOP1_FLOOR, relErrorBound(label));
  });
}

/**
 * The int8-activation path (what the loader picks from hidden 1024 up, i.e. the 1B+ models
 * whose matmuls dominate a step) measured on the same models: the rule's numbers. Its floor
 * is lower than int16's because int8 rounding (1/254 of a block's max) flips near-ties that
 * int16 does not; the values it reached are in docs/testing.md.
 */
const INT8_TOP1_FLOOR = 0.95;
const INT8_LABELS = [
  'default',
  ...CORE_TYPE_FIXTURES.filter((name) => name.startsWith('llama-q')),
  ...PLANE_TYPE_FIXTURES,
];

for (const label of INT8_LABELS) {
  test(`teacher-forced logits with int8 activations: ${label}`, async () => {
    const c = cases.find((x) => x.label === label);
    assert.ok(c, `no model/fixture called ${label}`);
    const s = await runTeacherForced(c, refs.get(label)!, 'int8');
    checkAgreement(label, c.weightType, 'int8', s, INT8_TOP1_FLOOR, int8RelErrorBound(label));
  });
}

/**
 * The sliding-window fixtures have teeth: the same weights with the window switched off (the
 * reference once more, `WINDOW_OFF`) give logits far from the windowed reference past the
 * window, so a Prism that ignored the window would fail the tests above.
 */
for (const label of WINDOW_LABELS) {
  test(`ignoring the sliding window would fail the numerics: ${label}`, () => {
    const windowed = refs.get(label)!;
    const open = windowlessRefs.get(label)!;
    const s: Stats = { positions: 0, strictAgree: 0, relSum: 0, relMax: 0, maxAbs: 0, greedyChecked: 0 };
    // Positions past the window, where the two differ.
    const from = WINDOW_SIZES[label];
    const n = windowed.positions - from;
    compareRows(open.rows(from, n), windowed.rows(from, n), n, windowed.vocab, s);
    const strict = s.strictAgree / s.positions;
    const relMean = s.relSum / s.positions;
    console.log(
      `numerics ${label.padEnd(18)} windowless vs windowed reference past the window (${n} positions): ` +
        `top1=${(strict * 100).toFixed(2)}% ` +
        `relErr mean=${relMean.toExponential(2)}`,
    );
    assert.ok(
      strict < STRICT_TOP1_FLOOR || relMean > 10 * relErrorBound(label),
      `${label}: the window changes too little (top-1 ${(strict * 100).toFixed(2)}%, relErr ${relMean.toExponential(2)})`,
    );
  });
}
