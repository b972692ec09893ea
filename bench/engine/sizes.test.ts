import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBenchArgs } from '../engine.js';
import {
  SIZES_BEGIN,
  SIZES_END,
  listSizeModels,
  parseList,
  renderSizeSuite,
  replaceSizesSection,
} from './sizes.js';
import { projectRoot } from '../../engine/default-model.js';
import { againstBestPeer, type EngineBenchReport } from './report.js';

test('--suite sizes: defaults to 1B and 3B in Q4_0, Q4_K, Q8_0 with shorter decode measures', () => {
  const args = parseBenchArgs(['--suite', 'sizes']);
  assert.ok(args !== 'help');
  assert.deepEqual(args.suite, {
    sizes: ['1b', '3b'],
    types: ['q4_0', 'q4_k', 'q8_0', 'q5_k_m', 'q3_k_m', 'iq4_xs'],
  });
  assert.equal(args.sequences, 16);
  assert.equal(args.newTokens, 32);
  const some = parseBenchArgs(['--suite', 'sizes', '--sizes', 'qwen1.5b', '--types', 'bf16,q4_1']);
  assert.ok(some !== 'help');
  assert.deepEqual(some.suite, { sizes: ['qwen1.5b'], types: ['bf16', 'q4_1'] });
  assert.throws(() => parseBenchArgs(['--suite', 'big']), /--suite must be 'sizes'; got 'big'/);
  assert.equal((parseBenchArgs(['--suite', 'sizes']) as { llamaCppSource: string }).llamaCppSource, 'auto');
  assert.throws(
    () => parseBenchArgs(['--llama-cpp-source', 'yes']),
    /--llama-cpp-source must be one of auto, build, off; got 'yes'/,
  );
  assert.throws(() => parseBenchArgs(['--sizes', '1b']), /--sizes and --types belong to --suite sizes/);
  assert.throws(() => parseBenchArgs(['--suite', 'sizes', '--model', 'x.gguf']), /exclusive/);
  assert.throws(() => parseList('types', 'q4_0,q5_k', ['q4_0'], []), /--types takes .* got 'q5_k'/);
  assert.throws(() => parseList('sizes', ',', ['1b'], []), /--sizes must name at least one/);
});

test('size-suite table: roofline from the file bytes per token, ratios of the medians', () => {
  const measure = (label: string, l: number, p: number, source?: number) => ({
    label,
    runs: { 'llama.cpp': [l], prism: [p], ...(source ? { 'llama.cpp source': [source] } : {}) },
    median: { 'llama.cpp': l, prism: p, ...(source ? { 'llama.cpp source': source } : {}) },
    ratio: p / l,
    best: againstBestPeer({ 'llama.cpp': l, prism: p, ...(source ? { 'llama.cpp source': source } : {}) }),
  });
  const report = {
    settings: {
      threads: 2,
      runs: 1,
      warmupRuns: 0,
      promptTokens: 32,
      newTokens: 32,
      sequences: 16,
      prefillTokens: 512,
    },
    measures: {
      // The source build is the faster peer here: the ratio is against it, and says so.
      singleDecode: measure('single-stream decode', 20, 30, 24),
      prefill: measure('prefill', 80, 100),
      aggregateDecode: measure('aggregate', 40, 80),
    },
    roofline: {
      bandwidthGBs: 25,
      bandwidthRuns: [24, 25, 26],
      weightBytes: 500e6,
      tokPerSec: 50,
      percent: { 'llama.cpp': 40, 'llama.cpp source': 48, prism: 60 },
      // 20, 24 and 30 tok/s × 500 MB per token.
      decodeGBs: { 'llama.cpp': 10, 'llama.cpp source': 12, prism: 15 },
    },
  } as unknown as EngineBenchReport;
  const model = {
    size: '1b',
    type: 'q4_0',
    shape: 'Llama-3.2-1B',
    path: 'x',
    exists: true,
    bytesPerToken: 500e6,
  };
  const md = renderSizeSuite([{ model, report }], {
    date: 'd',
    commit: 'c',
    machine: 'm',
    command: 'cmd',
    load: '1',
  });
  // Read rate 25 GB/s; decode GB/s 10, 12 and 15 (prebuilt, source, Prism) = 40%, 48% and 60%
  // of it; prefill and aggregate ran without the source build: their ratios are the prebuilt's.
  assert.match(
    md,
    /\| Llama-3\.2-1B \| Q4_0 \| 500 \| 25\.0 \| 10\.0 \| 12\.0 \| 15\.0 \| 40% \| 48% \| 60% \| 20\.0 \| 24\.0 \| 30\.0 \| \*\*1\.25×\*\* \(source\) \| 80\.0 \| — \| 100\.0 \| \*\*1\.25×\*\* \(prebuilt\) \| 40\.0 \| — \| 80\.0 \| \*\*2\.00×\*\* \(prebuilt\) \|/,
  );
  assert.match(md, /single-stream decode: 20\.0 \| 24\.0 \| 30\.0/);
  assert.match(md, /sustained reads, GB\/s: 24\.0, 25\.0, 26\.0/);
  assert.doesNotMatch(md, /Prism memory/);
  assert.doesNotMatch(md, /- Kernels:/); // no engine descriptions in this report
  const described = renderSizeSuite(
    [
      {
        model,
        report: {
          ...report,
          engines: { prism: { isa: 'avx2' }, 'llama.cpp': { 'ggml CPU features': 'AVX2 FMA F16C' } },
        },
      },
    ],
    { date: 'd', commit: 'c', machine: 'm', command: 'cmd', load: '1' },
  );
  assert.match(described, /- Kernels: Prism avx2; llama\.cpp's ggml CPU backend AVX2 FMA F16C/);
  const withMemory = renderSizeSuite(
    [
      {
        model,
        report: {
          ...report,
          prismMemory: { weightBytes: 557 * 2 ** 20, kvBytes: 2 ** 25, rssGrowthBytes: 3 * 2 ** 30 },
        },
      },
    ],
    { date: 'd', commit: 'c', machine: 'm', command: 'cmd', load: '1' },
  );
  assert.match(
    withMemory,
    /- Llama-3\.2-1B Q4_0: weights 557 MiB read per token, KV pool 32 MiB, resident set \+3072 MiB while Prism loaded/,
  );
  const doc = `a\n${SIZES_BEGIN}\nold\n${SIZES_END}\nb`;
  assert.equal(replaceSizesSection(doc, 'new'), `a\n${SIZES_BEGIN}\nnew\n${SIZES_END}\nb`);
  assert.throws(() => replaceSizesSection('no markers', 'x'), /size-suite markers/);
});

test('size suite: MoE shapes count only the experts a token uses in its bytes per token', () => {
  const args = parseBenchArgs(['--suite', 'sizes', '--sizes', 'moe-1b-a400m,moe-30b-a3b', '--types', 'q4_k']);
  assert.ok(args !== 'help');
  assert.deepEqual(args.suite?.sizes, ['moe-1b-a400m', 'moe-30b-a3b']);
  const [small, big] = listSizeModels(projectRoot(), ['moe-1b-a400m', 'moe-30b-a3b'], ['q4_k']);
  assert.equal(big.shape, 'Qwen3-30B-A3B');
  // Qwen3-30B-A3B's expert matrices alone are 48 × 128 × 3 × 2048 × 768 weights (~16 GB in
  // Q4_K); a token reads 8 of the 128 experts, attention, norms, routers and the output matrix.
  assert.ok(big.bytesPerToken > 1.2e9 && big.bytesPerToken < 2.2e9, `${big.bytesPerToken} bytes per token`);
  // The 8-layer cut keeps every per-layer shape: its bytes per token are the full model's
  // per-layer share times 8 plus the same output matrix, so between 8/48 and twice that.
  const [cut] = listSizeModels(projectRoot(), ['moe-30b-a3b-l8'], ['q4_k']);
  assert.equal(cut.shape, 'Qwen3-30B-A3B (8 of 48 layers)');
  assert.ok(
    cut.bytesPerToken > big.bytesPerToken / 6 && cut.bytesPerToken < big.bytesPerToken / 3,
    `${cut.bytesPerToken} bytes per token`,
  );
  assert.equal(small.shape, 'Granite-3.1-1B-A400M');
  assert.ok(
    small.bytesPerToken > 1.5e8 && small.bytesPerToken < 3.5e8,
    `${small.bytesPerToken} bytes per token`,
  );
});
