/**
 * Shared by the tokenizer tests: the Python reference (oracle.py), the GGUF loading path
 * used while the native addon is not built yet, and the strings every test runs over.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../default-model.js';
import type { Tokenizer } from './hf-tokenizer.js';
import { loadTokenizer, tokenizerFromGgufMetadata } from './load.js';

const here = dirname(fileURLToPath(import.meta.url));

export interface OracleAnswer {
  encode: { with_special: number[]; without_special: number[] }[];
  decode: { keep: string; skip: string }[];
  chat: (string | { error: string })[];
  info?: { bos_token_id: number | null; eos_token_id: number | null; vocab_size: number };
}

/** Runs oracle.py once with one request (transformers' import is the slow part: batch everything). */
export function runOracle(request: Record<string, unknown>): OracleAnswer {
  const out = execFileSync('python3', [join(here, 'oracle.py')], {
    input: JSON.stringify(request),
    maxBuffer: 256 * 1024 * 1024,
    env: {
      ...process.env,
      TRANSFORMERS_VERBOSITY: 'error',
      HF_HUB_OFFLINE: '1',
      TOKENIZERS_PARALLELISM: 'false',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return JSON.parse(out.toString('utf8')) as OracleAnswer;
}

function nativeAddonBuilt(): boolean {
  const root = projectRoot();
  return ['Release', 'Debug'].some((kind) => existsSync(join(root, 'build', kind, 'prism_native.node')));
}

/**
 * The tokenizer of a GGUF file: through `loadTokenizer` (native metadata reader) when the addon
 * is built, else from the same metadata read by Python's `gguf` package, so that the
 * tokenizer tests do not wait for the native build. Both paths feed `tokenizerFromGgufMetadata`.
 */
export async function loadGgufTokenizer(
  path: string,
  log: (line: string) => void = () => {},
): Promise<Tokenizer> {
  if (nativeAddonBuilt()) return loadTokenizer(path);
  log('native addon not built: reading the GGUF metadata with Python gguf instead of readGgufMetadata');
  const dir = mkdtempSync(join(tmpdir(), 'prism-gguf-meta-'));
  try {
    const out = join(dir, 'meta.json');
    execFileSync('python3', [join(here, 'oracle.py'), 'dump-gguf-metadata', path, out], { stdio: 'ignore' });
    return await tokenizerFromGgufMetadata(JSON.parse(readFileSync(out, 'utf8')), path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Varied text: ASCII, accents, CJK, emoji, code, whitespace runs, digits, special-token text. */
export const SAMPLE_STRINGS: readonly string[] = [
  'Hello world',
  ' Hello world',
  'hello',
  '',
  ' ',
  'a',
  "I'm sure you'll see they've done it, haven't they? I'D SAY SO.",
  'Café, naïve façade, jalapeño, Ærøskøbing, Straße, Ünïcödé',
  'Zoë déjà vu — “quotes” ‘single’ … « guillemets »',
  '你好，世界！这是一个测试。日本語のテキストも。한국어 문장입니다.',
  'Emoji: 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖',
  '🤖🤖🤖',
  'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n',
  'const x = { "a": [1, 2, 3], b: `t${y}` }; // comment\n\tif (x) {\n\t\treturn;\n\t}',
  'Whitespace   runs\t\ttabs\n\n\nnewlines  \n  trailing   ',
  '\n',
  '\r\n\r\nwindows\r\nline',
  'Numbers: 0 7 42 123 1234 12345 3.14159 1,000,000 2026-11-21 0x1F 1e-9',
  'Digits glued: abc123def 99problems v2.0.1',
  '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n',
  'text<|im_end|>more',
  '<|endoftext|>',
  'Not special: <|im_start |> <im_start> <|unknown|>',
  'Ελληνικά, русский текст, עברית, العربية, हिन्दी, ไทย',
  'Combining: e\u0301 a\u0308 n\u0303; ZWJ\u200d and ZWNJ\u200c; NBSP\u00a0here',
  'URL https://example.org/path?q=1&r=two#frag and email a.b@example.com',
  '$$$ %%% ^^^ ||| ~~~ ``` <<< >>> === +++ ---',
  'A'.repeat(64) + ' ' + 'ab'.repeat(40),
];

/** Deterministic pseudo-random id lists over a vocabulary (decode parity on arbitrary ids, broken UTF-8 included). */
export function randomIdLists(vocabSize: number, count: number, length: number, seed = 1234): number[][] {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  return Array.from({ length: count }, () => Array.from({ length }, () => next() % vocabSize));
}

export function removeDir(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
