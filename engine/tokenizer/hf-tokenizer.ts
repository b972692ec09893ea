/**
 * The one Tokenizer implementation: a tokenizer.json document run by Hugging Face
 * `tokenizers` (Node binding), whatever the source (an HF directory's file, or one built from
 * a GGUF vocabulary). `encodeAsync` is the binding's own (async) encode; the synchronous
 * `encode` goes through `SyncEncoder`;
 * decoding runs on the calling thread with the tokenizer's own decoder over a token-string
 * table, which is what the library's `decode` does, synchronously.
 */
import { Tokenizer as NativeTokenizer, type Decoder } from 'tokenizers';
import { invalidArgument } from '../errors.js';
import type { ChatMessage } from '../types.js';
import {
  FALLBACK_CHATML_TEMPLATE,
  renderChatTemplate,
  type ChatTemplateCallOptions,
} from './chat-template.js';
import { Detokenizer, type IncrementalDetokenizer } from './detokenizer.js';
import { grammarVocab, type GrammarVocab } from './grammar-vocab.js';
import { SyncEncoder } from './sync-encoder.js';

export interface Tokenizer {
  /** Size of the vocabulary: ids 0..vocabSize-1 (added tokens included). */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  /** Ids that end generation: eos, plus end-of-turn tokens such as <|im_end|> / <|eot_id|>. */
  readonly eosTokenIds: readonly number[];
  /** Whether `encode(text)` (with special tokens) starts with BOS. */
  readonly addBosToken: boolean;
  /** The model's own template; null when it has none (applyChatTemplate then uses plain ChatML). */
  readonly chatTemplate: string | null;
  /** Special tokens written in the text (e.g. "<|im_start|>") become their ids. */
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  /**
   * Starts the thread behind `encode` without waiting for it, so that the first `encode` on
   * the event loop (structured output's jump-forward) does not wait for a tokenizer build.
   */
  prepareEncode(): void;
  /** The same ids as `encode`, computed on the libuv pool: the event loop is not blocked meanwhile. */
  encodeAsync(text: string, options?: { addSpecialTokens?: boolean }): Promise<number[]>;
  /**
   * A pooling input's ids and token types (0: the first text, 1: the pair's second), cut to
   * at most `maxLength` tokens by the tokenizer's own truncation (special tokens kept; a pair
   * shortens its longer text first, as transformers' longest_first), from the end ('right')
   * or the start ('left'). On the libuv pool.
   */
  encodePooling(text: string, pair: string | null, options: PoolingEncodeOptions): Promise<PoolingEncoding>;
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  /** Human text of one token as it reads inside a sequence (e.g. " Hello"), for logprobs. */
  tokenText(id: number): string;
  isSpecial(id: number): boolean;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateCallOptions): string;
  createDetokenizer(options?: { skipSpecialTokens?: boolean }): IncrementalDetokenizer;
  /** Raw token strings and their spelling, for the grammar engine (engine/structured/). */
  grammarVocab(): GrammarVocab;
}

export interface PoolingEncodeOptions {
  readonly addSpecialTokens: boolean;
  /** 0: no truncation. */
  readonly maxLength: number;
  readonly direction: 'left' | 'right';
}

export interface PoolingEncoding {
  readonly ids: number[];
  readonly typeIds: number[];
  /** Tokens before truncation (so a caller can refuse an input that was too long). */
  readonly untruncatedLength: number;
}

/** Facts about the tokenizer that tokenizer.json does not hold (from tokenizer_config.json / GGUF keys). */
export interface TokenizerFacts {
  /** BOS/EOS as an id, or as the token's text (tokenizer_config.json names them by text). */
  readonly bosToken: number | string | null;
  readonly eosToken: number | string | null;
  /** Further ids that end generation (generation_config eos ids, GGUF eot/eom). */
  readonly extraEosTokenIds: readonly number[];
  readonly chatTemplate: string | null;
}

/** Tokens that end a turn in common chat formats: they stop generation when the template uses them. */
const END_OF_TURN_TOKENS = [
  '<|im_end|>',
  '<|eot_id|>',
  '<|eom_id|>',
  '<|end|>',
  '<end_of_turn>',
  '<|end_of_turn|>',
  '<|END_OF_TURN_TOKEN|>',
  '<|return|>',
];

export interface AddedTokenJson {
  readonly id: number;
  readonly content: string;
  readonly special?: boolean;
}

/** A tokenizer.json document, plus what its builder already knows (saves parsing it again). */
export interface TokenizerDocument {
  readonly json: string;
  /** The document's `added_tokens`; read from `json` when absent. */
  readonly addedTokens?: readonly AddedTokenJson[];
  /** id → token text for every id; asked from the library when absent. */
  readonly tokens?: readonly string[];
}

const MAX_TOKEN_ID = 0xffffffff;

/**
 * A tokenizer.json may carry truncation and padding of its own (sentence-transformers' files:
 * truncate and pad to 128). transformers turns them off for every call that does not ask for
 * them, and so does Prism: a prompt's length is the engine's business.
 */
function withoutFileDefaults(t: NativeTokenizer): NativeTokenizer {
  t.disableTruncation();
  t.disablePadding();
  return t;
}

function checkId(id: unknown, field: string): void {
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_TOKEN_ID) {
    throw invalidArgument(
      field,
      `must be a token id (an integer in [0, ${MAX_TOKEN_ID}]), got ${String(id)}`,
    );
  }
}

/** id → token text (model vocabulary and added tokens) as the library sees it; undefined for holes. */
function tokenTable(native: NativeTokenizer): (string | undefined)[] {
  const vocab = native.getVocab(true);
  let maxId = -1;
  for (const id of Object.values(vocab)) maxId = Math.max(maxId, id);
  const tokens = new Array<string | undefined>(maxId + 1);
  for (const [token, id] of Object.entries(vocab)) tokens[id] = token;
  return tokens;
}

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
  readonly addBosToken: boolean;
  readonly chatTemplate: string | null;

  /** id → token string (model vocabulary and added tokens); undefined for holes. */
  private readonly tokens: (string | undefined)[];
  private readonly special: Set<number>;
  private readonly decoder: Decoder | null;
  private readonly textCache = new Map<number, string>();
  /** Serves the synchronous `encode`; started by its first call. */
  private encoder: SyncEncoder | null = null;
  /** A plain token decoded before the one asked about in tokenText (see there). */
  private anchorId: number | null = null;
  /** Copies of the tokenizer with truncation set, per (maxLength, direction) (encodePooling). */
  private readonly truncating = new Map<string, NativeTokenizer>();

  private constructor(
    private readonly native: NativeTokenizer,
    /** The tokenizer.json the synchronous encoder's worker is built from, when first needed. */
    private readonly json: string,
    doc: TokenizerDocument,
    facts: TokenizerFacts,
    probes: { readonly probe: readonly number[]; readonly plain: readonly number[] },
  ) {
    this.tokens = doc.tokens ? [...doc.tokens] : tokenTable(native);
    this.vocabSize = this.tokens.length;
    this.special = new Set((doc.addedTokens ?? []).filter((t) => t.special).map((t) => t.id));
    this.decoder = native.getDecoder();
    const idOf = (text: string): number | null => {
      const id = this.tokens.indexOf(text);
      return id >= 0 ? id : null;
    };
    const resolve = (token: number | string | null): number | null => {
      if (token === null) return null;
      if (typeof token === 'number') return token >= 0 && token < this.vocabSize ? token : null;
      return idOf(token);
    };
    this.bosTokenId = resolve(facts.bosToken);
    const eosTokenId = resolve(facts.eosToken);
    this.chatTemplate = facts.chatTemplate;

    const eos = new Set<number>();
    if (eosTokenId !== null) eos.add(eosTokenId);
    for (const id of facts.extraEosTokenIds) if (id >= 0 && id < this.vocabSize) eos.add(id);
    if (facts.chatTemplate !== null) {
      for (const text of END_OF_TURN_TOKENS) {
        const id = idOf(text);
        if (id !== null && this.special.has(id) && facts.chatTemplate.includes(text)) eos.add(id);
      }
    }
    // The end-of-document token ends generation too when it is a special token (llama.cpp
    // counts it among its end-of-generation ids; Qwen's generation_config lists it).
    const endOfText = idOf('<|endoftext|>');
    if (endOfText !== null && this.special.has(endOfText)) eos.add(endOfText);
    this.eosTokenIds = [...eos];

    const { probe, plain } = probes;
    this.addBosToken =
      this.bosTokenId !== null && probe[0] === this.bosTokenId && plain[0] !== this.bosTokenId;
    this.anchorId = plain.length === 1 && !this.special.has(plain[0]) ? plain[0] : null;
  }

  /** Builds a tokenizer from a tokenizer.json document. */
  static async create(doc: TokenizerDocument, facts: TokenizerFacts, source: string): Promise<HfTokenizer> {
    let addedTokens = doc.addedTokens;
    if (!addedTokens) {
      let parsed: { added_tokens?: AddedTokenJson[] };
      try {
        parsed = JSON.parse(doc.json) as typeof parsed;
      } catch (error) {
        throw new Error(`${source}: tokenizer.json is not valid JSON: ${(error as Error).message}`);
      }
      addedTokens = parsed.added_tokens ?? [];
    }
    let native: NativeTokenizer;
    try {
      native = withoutFileDefaults(NativeTokenizer.fromString(doc.json));
    } catch (error) {
      throw new Error(
        `${source}: the tokenizers library rejected the tokenizer: ${(error as Error).message}`,
      );
    }
    // How 'a' encodes with and without special tokens tells whether encode adds a BOS.
    const probes = {
      probe: (await native.encode('a', null, { addSpecialTokens: true })).getIds(),
      plain: (await native.encode('a', null, { addSpecialTokens: false })).getIds(),
    };
    return new HfTokenizer(native, doc.json, { ...doc, addedTokens }, facts, probes);
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    if (typeof text !== 'string') throw invalidArgument('text', 'must be a string');
    // The worker (a thread with its own copy of the tokenizer) starts on the first call:
    // the engine encodes asynchronously and never needs it.
    this.encoder ??= SyncEncoder.open(this.json);
    return Array.from(this.encoder.encode(text, options.addSpecialTokens ?? true));
  }

  prepareEncode(): void {
    this.encoder ??= SyncEncoder.open(this.json);
  }

  async encodeAsync(text: string, options: { addSpecialTokens?: boolean } = {}): Promise<number[]> {
    if (typeof text !== 'string') throw invalidArgument('text', 'must be a string');
    const encoding = await this.native.encode(text, null, {
      addSpecialTokens: options.addSpecialTokens ?? true,
    });
    return encoding.getIds();
  }

  async encodePooling(
    text: string,
    pair: string | null,
    options: PoolingEncodeOptions,
  ): Promise<PoolingEncoding> {
    const addSpecialTokens = options.addSpecialTokens;
    const full = await this.native.encode(text, pair, { addSpecialTokens });
    const untruncatedLength = full.getIds().length;
    if (options.maxLength <= 0 || untruncatedLength <= options.maxLength)
      return { ids: full.getIds(), typeIds: full.getTypeIds(), untruncatedLength };
    // A copy with the truncation set: the shared instance serves every other request meanwhile.
    const key = `${options.maxLength}:${options.direction}`;
    let cut = this.truncating.get(key);
    if (!cut) {
      cut = withoutFileDefaults(NativeTokenizer.fromString(this.json));
      cut.setTruncation(options.maxLength, { direction: options.direction });
      if (this.truncating.size >= 8) this.truncating.delete(this.truncating.keys().next().value!);
      this.truncating.set(key, cut);
    }
    const encoding = await cut.encode(text, pair, { addSpecialTokens });
    return { ids: encoding.getIds(), typeIds: encoding.getTypeIds(), untruncatedLength };
  }

  /**
   * Ids past the tokenizer's vocabulary decode to nothing, as in transformers: a model's
   * embedding matrix often has padding rows beyond it (Qwen: 151,936 rows, 151,669 tokens)
   * that a sampler can pick. Anything that is not a token id at all is rejected.
   */
  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (!Array.isArray(ids)) throw invalidArgument('ids', 'must be an array of token ids');
    for (let i = 0; i < ids.length; i++) checkId(ids[i], `ids[${i}]`);
    return this.decodeLenient(ids, options.skipSpecialTokens ?? false);
  }

  /** decode() without the checks: unknown ids are dropped, as the library's decode does. */
  private decodeLenient(ids: readonly number[], skipSpecialTokens: boolean): string {
    const pieces: string[] = [];
    for (const id of ids) {
      const token = this.tokens[id];
      if (token === undefined) continue;
      if (skipSpecialTokens && this.special.has(id)) continue;
      pieces.push(token);
    }
    if (pieces.length === 0) return '';
    return this.decoder ? this.decoder.decode(pieces) : pieces.join(' ');
  }

  tokenText(id: number): string {
    const cached = this.textCache.get(id);
    if (cached !== undefined) return cached;
    checkId(id, 'id');
    if (id >= this.vocabSize) return '';
    // Decoded after a plain anchor token, so that decoders that treat the first token of a
    // sequence specially (SentencePiece strips its leading space) show the token as it reads
    // mid-sequence: "▁Hello" → " Hello".
    let text: string;
    if (this.anchorId !== null) {
      const anchor = this.decodeLenient([this.anchorId], false);
      const both = this.decodeLenient([this.anchorId, id], false);
      text = both.startsWith(anchor) ? both.slice(anchor.length) : this.decodeLenient([id], false);
    } else {
      text = this.decodeLenient([id], false);
    }
    this.textCache.set(id, text);
    return text;
  }

  isSpecial(id: number): boolean {
    return this.special.has(id);
  }

  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateCallOptions = {}): string {
    if (!Array.isArray(messages)) throw invalidArgument('messages', 'must be an array of chat messages');
    const source = options.template ?? this.chatTemplate ?? FALLBACK_CHATML_TEMPLATE;
    return renderChatTemplate(source, messages, {
      addGenerationPrompt: options.addGenerationPrompt,
      tools: options.tools,
      variables: options.variables,
      contentParts: options.contentParts,
      bosToken: this.bosTokenId !== null ? (this.tokens[this.bosTokenId] ?? null) : null,
      eosToken: this.eosTokenIds.length > 0 ? (this.tokens[this.eosTokenIds[0]] ?? null) : null,
    });
  }

  createDetokenizer(options: { skipSpecialTokens?: boolean } = {}): IncrementalDetokenizer {
    const skip = options.skipSpecialTokens ?? false;
    return new Detokenizer((ids) => this.decodeLenient(ids, skip));
  }

  grammarVocab(): GrammarVocab {
    return grammarVocab(this.json, this.tokens, (id) => this.special.has(id));
  }

  /** Stops the encode worker (it never keeps the process alive; this frees it early). */
  close(): void {
    this.encoder?.close();
  }
}
