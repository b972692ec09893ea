/**
 * The `tokenizer.ggml.pre` families of byte-level BPE vocabularies: the regexes that cut text
 * into words before the merges run, as llama.cpp applies them (llama-vocab.cpp). llama.cpp
 * runs a list of regexes one after the other, each splitting the pieces left by the previous
 * one and keeping both matches and the text between them — which is the Hugging Face
 * pre-tokenizer `Split(regex, "Isolated")` applied in sequence.
 */

/** GPT-2's word regex (also what `ByteLevel(use_regex=true)` applies by itself). */
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

/** Llama 3's regex (tiktoken cl100k style), with llama.cpp's case-insensitive contractions spelled out. */
const LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" +
  '| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

/** Qwen2's regex: Llama 3's with single digits. */
const QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" +
  '| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

/** GPT-4o / Llama 4 (o200k style). */
const GPT4O =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?" +
  "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?" +
  '|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

export interface PreTokenizerFamily {
  /** Regexes applied in order, each as `Split(..., Isolated)`, before the byte-level mapping. */
  readonly splits: readonly string[];
  /**
   * True when the last step is GPT-2's own regex, which `ByteLevel(use_regex=true)` applies
   * (as the family's Hugging Face tokenizer.json does), instead of one more `Split`.
   */
  readonly byteLevelRegex: boolean;
  /** Llama 3 style vocabularies emit a whole word that is in the vocabulary without merging it. */
  readonly ignoreMerges: boolean;
  /** llama.cpp adds BOS for this family when the file does not say (`tokenizer.ggml.add_bos_token`). */
  readonly defaultAddBos: boolean;
}

const gpt2: PreTokenizerFamily = {
  splits: [],
  byteLevelRegex: true,
  ignoreMerges: false,
  defaultAddBos: false,
};
const digitsThenGpt2: PreTokenizerFamily = {
  splits: ['\\p{N}'],
  byteLevelRegex: true,
  ignoreMerges: false,
  defaultAddBos: false,
};
const llama3: PreTokenizerFamily = {
  splits: [LLAMA3],
  byteLevelRegex: false,
  ignoreMerges: true,
  defaultAddBos: true,
};
const qwen2: PreTokenizerFamily = {
  splits: [QWEN2],
  byteLevelRegex: false,
  ignoreMerges: false,
  defaultAddBos: false,
};
const gpt4o: PreTokenizerFamily = {
  splits: [GPT4O],
  byteLevelRegex: false,
  ignoreMerges: false,
  defaultAddBos: false,
};

/** `tokenizer.ggml.pre` value → family (names as llama.cpp's converter writes them). */
const FAMILIES: Readonly<Record<string, PreTokenizerFamily>> = {
  // llama.cpp's fallback when a BPE file names no known pre-tokenizer.
  default: {
    splits: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2, '\\p{N}+', '[0-9][0-9][0-9]'],
    byteLevelRegex: false,
    ignoreMerges: false,
    defaultAddBos: false,
  },
  gpt2,
  mpt: gpt2,
  olmo: gpt2,
  jais: gpt2,
  trillion: gpt2,
  smollm: digitsThenGpt2,
  starcoder: digitsThenGpt2,
  refact: digitsThenGpt2,
  'command-r': digitsThenGpt2,
  codeshell: digitsThenGpt2,
  exaone: digitsThenGpt2,
  minerva: digitsThenGpt2,
  llama3,
  'llama-v3': llama3,
  'llama-bpe': llama3,
  falcon3: llama3,
  pixtral: llama3,
  dbrx: llama3,
  'smaug-bpe': llama3,
  qwen2,
  'qwen2.5': qwen2,
  'deepseek-r1-qwen': qwen2,
  stablelm2: qwen2,
  hunyuan: qwen2,
  megrez: qwen2,
  'gpt-4o': gpt4o,
  llama4: gpt4o,
  falcon: {
    splits: ['[\\p{P}\\$\\+<=>\\^~\\|`]+', GPT2, '[0-9][0-9][0-9]'],
    byteLevelRegex: false,
    ignoreMerges: false,
    defaultAddBos: false,
  },
};

/** `source` (the file) prefixes the error, as every GGUF metadata error does. */
export function preTokenizerFamily(pre: string, source: string): PreTokenizerFamily {
  const family = Object.hasOwn(FAMILIES, pre) ? FAMILIES[pre] : undefined;
  if (!family) {
    throw new Error(
      `${source}: tokenizer.ggml.pre: unsupported pre-tokenizer '${pre}' (supported: ${Object.keys(FAMILIES).sort().join(', ')})`,
    );
  }
  return family;
}

/** The `pre_tokenizer` object of a tokenizer.json for a byte-level BPE vocabulary of this family. */
export function byteLevelPreTokenizerJson(family: PreTokenizerFamily): object {
  const byteLevel = {
    type: 'ByteLevel',
    add_prefix_space: false,
    trim_offsets: true,
    use_regex: family.byteLevelRegex,
  };
  if (family.splits.length === 0) return byteLevel;
  return {
    type: 'Sequence',
    pretokenizers: [
      ...family.splits.map((regex) => ({
        type: 'Split',
        pattern: { Regex: regex },
        behavior: 'Isolated',
        invert: false,
      })),
      byteLevel,
    ],
  };
}
