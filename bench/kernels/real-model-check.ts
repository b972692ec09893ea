/**
 * Numerics of the Q5 / Q3 / Q2 / IQ4 kernels on a real model. The default model
 * (SmolLM2-135M-Instruct, a Q4_1 file) is requantized by llama.cpp's own quantizer
 * (scripts/llama_quantize.py, the llama-quantize tool's code) into the file types users
 * download; SmolLM2's 576-value rows are not whole 256-value super-blocks, so llama.cpp
 * falls back to Q5_1 / Q5_0 / IQ4_NL / Q4_0 for those matrices (as for every such model) and
 * keeps the K types for the 1536-wide FFN-down rows: every new type runs. Per file, over the
 * numerics passage, teacher-forced:
 *   - Prism (its own activation rule, int16 at this size; and int8, the 1B+ rule) against
 *     the float reference of the file's weights (test/reference/logits.py, transformers):
 *     top-1 agreement and mean relative logit error;
 *   - llama.cpp (node-llama-cpp) on the same file: its next token at every position
 *     (greedy), against the reference's top-1 and Prism's.
 * The requantized files are written once into models/quantized/ (git-ignored).
 *
 *   node --import tsx bench/kernels/real-model-check.ts [--types Q5_K_M,Q3_K_M,...] [--tokens 256]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ControlledEvaluateInputItem, Token } from 'node-llama-cpp';
import { ensureDefaultModel, projectRoot } from '../../engine/default-model.js';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
} from '../../native/native.js';
import { referenceLogits } from '../../test/reference/reference.js';
import { greedyPlan } from '../engine/plan.js';
import { loadPrebuiltLlamaModel } from '../engine/llamacpp.js';

const FILE_TYPES = ['Q5_K_M', 'Q5_K_S', 'Q3_K_M', 'Q2_K', 'IQ4_XS', 'IQ4_NL', 'Q5_0', 'Q5_1'];
const BLOCK = 16;
const CHUNK = 128;

const { values } = parseArgs({
  options: { types: { type: 'string' }, tokens: { type: 'string', default: '256' } },
});
const types = values.types ? values.types.split(',') : FILE_TYPES;
for (const t of types)
  if (!FILE_TYPES.includes(t)) throw new RangeError(`--types: ${t} is not one of ${FILE_TYPES}`);
const maxTokens = Number(values.tokens);
if (!Number.isInteger(maxTokens) || maxTokens < 16) throw new RangeError('--tokens must be an integer >= 16');

const root = projectRoot();
const source = ensureDefaultModel();
const python = existsSync(join(root, '.venv', 'bin', 'python'))
  ? join(root, '.venv', 'bin', 'python')
  : 'python3';
const outDir = join(root, 'models', 'quantized');
mkdirSync(outDir, { recursive: true });

function quantized(fileType: string): string {
  const path = join(outDir, `SmolLM2-135M-Instruct.${fileType}.gguf`);
  if (!existsSync(path)) {
    const r = spawnSync(
      python,
      [join(root, 'scripts', 'llama_quantize.py'), source, path, fileType, '--allow-requantize'],
      { stdio: 'inherit' },
    );
    if (r.status !== 0) throw new Error(`quantizing ${fileType} failed`);
  }
  return path;
}

/** Tensor types of the file's matrices, counted: what the file type's mix became here. */
function typeMix(path: string): string {
  const r = spawnSync(
    python,
    [
      '-c',
      'import sys, collections, gguf; r = gguf.GGUFReader(sys.argv[1]); ' +
        'c = collections.Counter(t.tensor_type.name for t in r.tensors if len(t.shape) > 1); ' +
        'print(" ".join(f"{k}×{v}" for k, v in sorted(c.items())))',
      path,
    ],
    { encoding: 'utf8' },
  );
  return r.stdout.trim();
}

function argmax(row: Float32Array, offset: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (row[offset + i] > row[offset + best]) best = i;
  return best;
}

/** Prism's teacher-forced top-1 picks and mean relative logit error against `ref`. */
async function prismRun(
  path: string,
  ids: Int32Array,
  vocab: number,
  refRows: Float32Array,
  activations: string,
) {
  const saved = process.env.PRISM_ACTIVATIONS;
  process.env.PRISM_ACTIVATIONS = activations;
  const model = await loadModel(path).finally(() => {
    if (saved === undefined) delete process.env.PRISM_ACTIVATIONS;
    else process.env.PRISM_ACTIVATIONS = saved;
  });
  const picks = new Int32Array(ids.length);
  let relSum = 0;
  const blocks = Array.from({ length: Math.ceil(ids.length / BLOCK) }, (_, i) => i);
  const ctx = createContext(model, {
    kvBlocks: blocks.length,
    blockSize: BLOCK,
    maxBatchTokens: CHUNK,
    maxSeqs: 1,
  });
  try {
    for (let start = 0; start < ids.length; start += CHUNK) {
      const n = Math.min(CHUNK, ids.length - start);
      const plan = greedyPlan(
        [{ tokens: Array.from(ids.subarray(start, start + n)), startPosition: start, blocks, sample: true }],
        BLOCK,
      );
      const result = await step(ctx, { ...plan, returnLogits: 'all' });
      const logits = result.logits!;
      for (let r = 0; r < n; r++) {
        picks[start + r] = argmax(logits, r * vocab, vocab);
        let d2 = 0;
        let b2 = 0;
        for (let v = 0; v < vocab; v++) {
          const b = refRows[(start + r) * vocab + v];
          const d = logits[r * vocab + v] - b;
          d2 += d * d;
          b2 += b * b;
        }
        relSum += Math.sqrt(d2 / b2);
      }
    }
  } finally {
    disposeContext(ctx);
  }
  const precision = modelInfo(model).activations;
  disposeModel(model);
  return { picks, relMean: relSum / ids.length, precision };
}

/** llama.cpp's greedy next token after every position of `ids` (teacher-forced). */
async function llamaRun(path: string, ids: Int32Array): Promise<Int32Array> {
  const { llama, model } = await loadPrebuiltLlamaModel(path, 2);
  const context = await model.createContext({
    contextSize: ids.length + 8,
    batchSize: ids.length,
    sequences: 1,
  });
  const sequence = context.getSequence();
  try {
    const input: ControlledEvaluateInputItem[] = Array.from(ids, (id) => [
      id as Token,
      { generateNext: { token: true } },
    ]);
    const out = await sequence.controlledEvaluate(input);
    return Int32Array.from(out, (o) => Number(o?.next?.token ?? -1));
  } finally {
    sequence.dispose();
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }
}

const passage = readFileSync(join(root, 'test', 'reference', 'passage.txt'), 'utf8');
const files = types.map((t) => ({ fileType: t, path: quantized(t) }));
const refs = referenceLogits(files.map((f) => ({ model: f.path, text: passage, maxTokens })));
const pct = (a: Int32Array, b: Int32Array) =>
  ((100 * a.filter((v, i) => v === b[i]).length) / a.length).toFixed(1);

const lines = [
  '| file type | matrices | positions | Prism top-1 vs reference (rule / int8) | Prism rel. logit error (rule / int8) | llama.cpp top-1 vs reference | Prism (rule) vs llama.cpp |',
  '|---|---|---:|---:|---:|---:|---:|',
];
for (const [i, f] of files.entries()) {
  const ref = refs[i];
  const rows = ref.rows(0, ref.positions);
  const refPicks = Int32Array.from({ length: ref.positions }, (_, r) =>
    argmax(rows, r * ref.vocab, ref.vocab),
  );
  const rule = await prismRun(f.path, ref.ids, ref.vocab, rows, 'auto');
  const int8 = await prismRun(f.path, ref.ids, ref.vocab, rows, 'int8');
  const llama = await llamaRun(f.path, ref.ids);
  lines.push(
    `| ${f.fileType} | ${typeMix(f.path)} | ${ref.positions} | ${pct(rule.picks, refPicks)}% (${rule.precision}) / ${pct(int8.picks, refPicks)}% | ` +
      `${rule.relMean.toExponential(2)} / ${int8.relMean.toExponential(2)} | ${pct(llama, refPicks)}% | ${pct(rule.picks, llama)}% |`,
  );
  process.stdout.write(lines[lines.length - 1] + '\n');
}
process.stdout.write('\n' + lines.join('\n') + '\n');
