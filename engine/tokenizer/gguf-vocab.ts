/**
 * Turns a GGUF file's embedded vocabulary (its `tokenizer.*` metadata) into a Hugging Face
 * `tokenizer.json` document, so that one tokenization engine (the `tokenizers` library) serves
 * both GGUF files and Hugging Face directories. The document reproduces what llama.cpp does
 * with the same file (the file's own runtime):
 *
 * - `gpt2` (byte-level BPE: SmolLM2, Qwen, Llama 3): BPE with the file's merges, the
 *   pre-tokenizer regexes of the `tokenizer.ggml.pre` family, ByteLevel mapping and decoder.
 * - `llama` (SentencePiece BPE: Llama 2, Mistral, TinyLlama): BPE whose merges come from the
 *   token scores (llama.cpp merges the adjacent pair whose result has the highest score;
 *   merges ranked by that score do the same), `byte_fallback` to `<0xXX>` tokens, `▁` for
 *   spaces via a Prepend+Replace normalizer (SentencePiece's "add dummy prefix", applied after
 *   every special token as llama.cpp does) and the matching decoder.
 *
 * - `bert` (WordPiece: BERT, MiniLM, nomic-embed; gguf-wordpiece.ts).
 *
 * Control tokens (type 3) become special added tokens and user-defined ones (type 4) plain
 * added tokens: both are matched whole in the text, as llama.cpp does.
 */
import type { GgufValue } from '../../native/native.js';
import type { AddedTokenJson } from './hf-tokenizer.js';
import { wordPieceDocument } from './gguf-wordpiece.js';
import { byteLevelPreTokenizerJson, preTokenizerFamily } from './pre-tokenizers.js';

/** llama.cpp's token types (`tokenizer.ggml.token_type`). */
export const TokenType = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** What the rest of the tokenizer needs besides the tokenizer.json document. */
export interface GgufTokenizerSpec {
  readonly tokenizerJson: string;
  /** The document's added tokens (control and user-defined tokens). */
  readonly addedTokens: readonly AddedTokenJson[];
  /** id → token text. */
  readonly tokens: readonly string[];
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  /** `eot`/`eom` ids: end of a turn, which ends generation too. */
  readonly endOfTurnIds: readonly number[];
  readonly addBosToken: boolean;
  readonly chatTemplate: string | null;
}

type Metadata = Record<string, GgufValue>;

function field(source: string, key: string): string {
  return `${source}: ${key}`;
}

function getString(meta: Metadata, key: string, source: string, required: true): string;
function getString(meta: Metadata, key: string, source: string, required: false): string | undefined;
function getString(meta: Metadata, key: string, source: string, required: boolean): string | undefined {
  const value = meta[key];
  if (value === undefined) {
    if (required) throw new Error(`${field(source, key)}: missing (the file has no embedded tokenizer)`);
    return undefined;
  }
  if (typeof value !== 'string') throw new Error(`${field(source, key)}: must be a string`);
  return value;
}

function getStringArray(meta: Metadata, key: string, source: string): string[] | undefined {
  const value = meta[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new Error(`${field(source, key)}: must be an array of strings`);
  }
  return value as string[];
}

function getNumberArray(meta: Metadata, key: string, source: string, length: number): number[] | undefined {
  const value = meta[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new Error(`${field(source, key)}: must be an array`);
  if (value.length !== length) {
    throw new Error(`${field(source, key)}: has ${value.length} entries, expected one per token (${length})`);
  }
  return value.map((v) => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || Number.isNaN(n)) throw new Error(`${field(source, key)}: must hold numbers`);
    return n;
  });
}

function getTokenId(meta: Metadata, key: string, source: string, vocabSize: number): number | null {
  const value = meta[key];
  if (value === undefined) return null;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw new Error(`${field(source, key)}: must be an integer`);
  // llama.cpp ignores an out-of-range special id (it warns and keeps its default); so do we.
  if (n < 0 || n >= vocabSize) return null;
  return n;
}

function getBool(meta: Metadata, key: string, source: string): boolean | undefined {
  const value = meta[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new Error(`${field(source, key)}: must be a boolean`);
  return value;
}

/**
 * Merges implied by SentencePiece scores (the same rule as transformers' `generate_merges`):
 * every split of a token into two vocabulary pieces is a merge ranked by the token's score,
 * best first; ties keep the shorter left piece, then the shorter right piece, first.
 */
export function mergesFromScores(tokens: readonly string[], scores: readonly number[]): [string, string][] {
  const vocab = new Map<string, number>();
  tokens.forEach((t, i) => vocab.set(t, i));
  const merges: { left: string; right: string; score: number; leftLen: number; rightLen: number }[] = [];
  // Python iterates a dict built from the token list, so a repeated token is visited once,
  // at its first position, with its last score.
  const scoreOf = new Map<string, number>();
  tokens.forEach((t, i) => scoreOf.set(t, scores[i]));
  for (const [token, score] of scoreOf) {
    let total = 0;
    for (const _ of token) total++;
    const local: (typeof merges)[number][] = [];
    let leftLen = 0;
    // Split points at code-point boundaries (Python slices strings by code point).
    for (let pos = 0; pos < token.length;) {
      pos += token.codePointAt(pos)! > 0xffff ? 2 : 1;
      leftLen++;
      if (pos >= token.length) break;
      const left = token.slice(0, pos);
      const right = token.slice(pos);
      if (vocab.has(left) && vocab.has(right))
        local.push({ left, right, score, leftLen, rightLen: total - leftLen });
    }
    if (local.length > 1) {
      local.sort(
        (a, b) => vocab.get(a.left)! - vocab.get(b.left)! || vocab.get(a.right)! - vocab.get(b.right)!,
      );
    }
    for (const m of local) merges.push(m);
  }
  merges.sort((a, b) => b.score - a.score || b.leftLen - a.leftLen || b.rightLen - a.rightLen);
  return merges.map((m) => [m.left, m.right]);
}

/** A TemplateProcessing post-processor adding BOS/EOS, or null when neither is added. */
export function postProcessor(
  bos: string | null,
  bosId: number | null,
  eos: string | null,
  eosId: number | null,
): object | null {
  const single: object[] = [];
  const pair: object[] = [];
  const special: Record<string, object> = {};
  if (bos !== null && bosId !== null) {
    single.push({ SpecialToken: { id: bos, type_id: 0 } });
    pair.push({ SpecialToken: { id: bos, type_id: 0 } });
    special[bos] = { id: bos, ids: [bosId], tokens: [bos] };
  }
  single.push({ Sequence: { id: 'A', type_id: 0 } });
  pair.push({ Sequence: { id: 'A', type_id: 0 } });
  if (eos !== null && eosId !== null) {
    single.push({ SpecialToken: { id: eos, type_id: 0 } });
    pair.push({ SpecialToken: { id: eos, type_id: 0 } });
    special[eos] = { id: eos, ids: [eosId], tokens: [eos] };
  }
  pair.push({ Sequence: { id: 'B', type_id: 1 } });
  if (Object.keys(special).length === 0) return null;
  return { type: 'TemplateProcessing', single, pair, special_tokens: special };
}

/** Builds the tokenizer.json document and the token facts from a GGUF file's metadata. */
export function ggufTokenizerSpec(meta: Metadata, source: string): GgufTokenizerSpec {
  const model = getString(meta, 'tokenizer.ggml.model', source, true);
  const tokens = getStringArray(meta, 'tokenizer.ggml.tokens', source);
  if (!tokens || tokens.length === 0)
    throw new Error(`${field(source, 'tokenizer.ggml.tokens')}: missing or empty`);
  const vocabSize = tokens.length;
  const types =
    getNumberArray(meta, 'tokenizer.ggml.token_type', source, vocabSize) ??
    tokens.map(() => TokenType.normal);

  // llama.cpp requires every token text to be distinct (one id per text).
  const ids = new Map<string, number>();
  tokens.forEach((t, i) => {
    const prev = ids.get(t);
    if (prev !== undefined) {
      throw new Error(
        `${field(source, 'tokenizer.ggml.tokens')}: token ${JSON.stringify(t)} appears twice (ids ${prev} and ${i})`,
      );
    }
    ids.set(t, i);
  });

  const bosId = getTokenId(meta, 'tokenizer.ggml.bos_token_id', source, vocabSize);
  const eosId = getTokenId(meta, 'tokenizer.ggml.eos_token_id', source, vocabSize);
  const unkId = getTokenId(meta, 'tokenizer.ggml.unknown_token_id', source, vocabSize);
  const endOfTurnIds = ['tokenizer.ggml.eot_token_id', 'tokenizer.ggml.eom_token_id']
    .map((k) => getTokenId(meta, k, source, vocabSize))
    .filter((id): id is number => id !== null);
  const explicitAddBos = getBool(meta, 'tokenizer.ggml.add_bos_token', source);
  const addEos = getBool(meta, 'tokenizer.ggml.add_eos_token', source) ?? false;
  const chatTemplate = getString(meta, 'tokenizer.chat_template', source, false) ?? null;

  const addedTokens: (AddedTokenJson & Record<string, unknown>)[] = [];
  const addToken = (id: number, special: boolean) =>
    addedTokens.push({
      id,
      content: tokens[id],
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special,
    });

  let body: object;
  let addBos: boolean;
  // A vocabulary with its own framing (WordPiece's [CLS] .. [SEP]) and spelling of the tokens.
  let framing: { readonly postProcessor: object; readonly tokens: string[] } | undefined;
  if (model === 'bert') {
    for (let i = 0; i < vocabSize; i++)
      if (types[i] === TokenType.control || types[i] === TokenType.unknown) addToken(i, true);
    const lowercase = getBool(meta, 'tokenizer.ggml.normalizer.lowercase', source) ?? true;
    const wp = wordPieceDocument(
      tokens,
      (i) =>
        types[i] === TokenType.control ||
        types[i] === TokenType.unknown ||
        types[i] === TokenType.userDefined,
      {
        // llama.cpp's defaults for a bert vocabulary when the file names none.
        cls: getTokenId(meta, 'tokenizer.ggml.cls_token_id', source, vocabSize) ?? bosId ?? 101,
        sep: getTokenId(meta, 'tokenizer.ggml.seperator_token_id', source, vocabSize) ?? 102,
        unk: unkId ?? 100,
      },
      {
        lowercase,
        stripAccents: getBool(meta, 'tokenizer.ggml.normalizer.strip_accents', source) ?? lowercase,
      },
    );
    body = wp.body;
    framing = wp;
    addBos = false;
  } else if (model === 'gpt2') {
    const pre = getString(meta, 'tokenizer.ggml.pre', source, false) ?? 'default';
    const family = preTokenizerFamily(pre, source);
    const merges = getStringArray(meta, 'tokenizer.ggml.merges', source);
    if (!merges)
      throw new Error(`${field(source, 'tokenizer.ggml.merges')}: missing (byte-level BPE needs its merges)`);
    const vocab: Record<string, number> = {};
    tokens.forEach((t, i) => (vocab[t] = i));
    for (let i = 0; i < vocabSize; i++) {
      if (types[i] === TokenType.control || types[i] === TokenType.unknown) addToken(i, true);
      else if (types[i] === TokenType.userDefined) addToken(i, false);
    }
    body = {
      normalizer: null,
      pre_tokenizer: byteLevelPreTokenizerJson(family),
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: family.ignoreMerges,
        vocab,
        merges: merges.map((m, i) => splitMerge(m, i, source)),
      },
    };
    addBos = explicitAddBos ?? family.defaultAddBos;
  } else if (model === 'llama') {
    const scores = getNumberArray(meta, 'tokenizer.ggml.scores', source, vocabSize);
    if (!scores)
      throw new Error(
        `${field(source, 'tokenizer.ggml.scores')}: missing (a SentencePiece vocabulary needs its scores)`,
      );
    const addSpacePrefix = getBool(meta, 'tokenizer.ggml.add_space_prefix', source) ?? true;
    const vocab: Record<string, number> = {};
    tokens.forEach((t, i) => (vocab[t] = i));
    for (let i = 0; i < vocabSize; i++) {
      if (types[i] === TokenType.control || types[i] === TokenType.unknown) addToken(i, true);
      else if (types[i] === TokenType.userDefined) addToken(i, false);
    }
    const unk = unkId ?? types.indexOf(TokenType.unknown);
    const replace = { type: 'Replace', pattern: { String: ' ' }, content: '▁' };
    body = {
      normalizer: addSpacePrefix
        ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, replace] }
        : replace,
      pre_tokenizer: null,
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
          { type: 'ByteFallback' },
          { type: 'Fuse' },
          ...(addSpacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
        ],
      },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: unk >= 0 ? tokens[unk] : null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        ignore_merges: false,
        vocab,
        merges: mergesFromScores(tokens, scores),
      },
    };
    // llama.cpp and transformers add BOS to a SentencePiece vocabulary that does not say otherwise.
    addBos = explicitAddBos ?? true;
  } else {
    throw new Error(
      `${field(source, 'tokenizer.ggml.model')}: unsupported tokenizer model '${model}' (supported: gpt2, llama, bert)`,
    );
  }

  const document = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    ...body,
    post_processor:
      framing?.postProcessor ??
      postProcessor(
        addBos && bosId !== null ? tokens[bosId] : null,
        addBos ? bosId : null,
        addEos && eosId !== null ? tokens[eosId] : null,
        addEos ? eosId : null,
      ),
  };
  return {
    tokenizerJson: JSON.stringify(document),
    addedTokens,
    tokens: framing?.tokens ?? tokens,
    vocabSize,
    bosTokenId: bosId,
    eosTokenId: eosId,
    endOfTurnIds,
    addBosToken: addBos && bosId !== null,
    chatTemplate,
  };
}

/** "left right" → [left, right], split at the first space after the first character (as llama.cpp does). */
function splitMerge(merge: string, index: number, source: string): [string, string] {
  const pos = merge.indexOf(' ', 1);
  if (pos < 0)
    throw new Error(
      `${field(source, 'tokenizer.ggml.merges')}[${index}]: ${JSON.stringify(merge)} has no space`,
    );
  return [merge.slice(0, pos), merge.slice(pos + 1)];
}
