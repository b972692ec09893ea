import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DOC_BEGIN,
  DOC_END,
  renderMarkdown,
  renderText,
  replaceDocSection,
  type EngineBenchReport,
} from './report.js';

const measure = (label: string, llama: number, prism: number) => ({
  label,
  runs: { 'llama.cpp': [llama, llama], prism: [prism, prism] },
  median: { 'llama.cpp': llama, prism },
  ratio: prism / llama,
});

const report: EngineBenchReport = {
  date: '2026-11-21T12:00:00Z',
  commit: 'abc1234',
  machine: 'Test CPU, 2 logical cores',
  loadAverage: { start: 1.25, end: 3 },
  command: 'npm run bench:engine',
  model: { path: 'models/x.gguf', name: 'x', weightBytes: 80e6 },
  settings: {
    threads: 2,
    runs: 2,
    warmupRuns: 1,
    promptTokens: 32,
    newTokens: 128,
    sequences: 32,
    prefillTokens: 512,
    tokenizer: 'llama.cpp ids',
  },
  engines: { 'llama.cpp': { threads: 2 }, prism: { isa: 'avx2' } },
  skipped: {},
  measures: {
    singleDecode: measure('single-stream decode', 50, 75),
    aggregateDecode: measure('aggregate decode, 32 sequences', 120, 60),
    prefill: measure('prefill, 512-token prompt', 500, 500),
  },
  roofline: {
    bandwidthGBs: 20,
    bandwidthRuns: [20],
    weightBytes: 80e6,
    tokPerSec: 250,
    percent: { 'llama.cpp': 20, prism: 30 },
  },
  continuations: [
    {
      question: 'Q|1',
      promptTokens: 9,
      ids: { 'llama.cpp': [1, 2], prism: [1, 3] },
      text: { 'llama.cpp': 'a\nb', prism: 'a c' },
      identical: false,
      commonPrefix: 1,
    },
  ],
};

test('text table shows medians and ratios', () => {
  const text = renderText(report);
  assert.match(text, /single-stream decode\s+50\.0\s+75\.0\s+1\.50×/);
  assert.match(text, /aggregate decode, 32 sequences\s+120\.0\s+60\.0\s+0\.50×/);
  assert.match(text, /250 tok\/s; llama\.cpp 20\.0%, prism 30\.0%/);
  assert.match(text, /differ after 1 common tokens/);
});

test('markdown escapes table cells and carries date, commit and command', () => {
  const md = renderMarkdown(report);
  assert.match(md, /- Commit: `abc1234`/);
  assert.match(md, /- Command: `npm run bench:engine`/);
  assert.match(md, /load average 1\.3 when the measures started, 3\.0 when they ended/);
  assert.match(md, /\| prefill, 512-token prompt \| 500\.0 \| 500\.0 \| 1\.00× \|/);
  assert.match(md, /\| Q\\\|1 \| a↵b \| a c \| first 1 tokens agree \|/);
});

test('replaceDocSection swaps only the text between the markers', () => {
  const doc = `# B\n\nintro\n${DOC_BEGIN}\nold\n${DOC_END}\n\n## Next section\n`;
  const updated = replaceDocSection(doc, 'new body');
  assert.equal(updated, `# B\n\nintro\n${DOC_BEGIN}\nnew body\n${DOC_END}\n\n## Next section\n`);
  assert.equal(
    replaceDocSection(updated, 'again'),
    `# B\n\nintro\n${DOC_BEGIN}\nagain\n${DOC_END}\n\n## Next section\n`,
  );
  assert.throws(() => replaceDocSection('# no markers', 'x'), /no engine-benchmark markers/);
});
