/**
 * A GGUF `bert` vocabulary (llama.cpp's WPM: BERT, MiniLM, nomic-embed) as a tokenizer.json
 * WordPiece document. llama.cpp's converter writes word-start pieces with a leading U+2581 and
 * continuations bare (conversion/bert.py); WordPiece spells them bare and `##`-prefixed. Its
 * normalisation is BERT's: lower-casing and accent stripping unless the file says otherwise
 * (`tokenizer.ggml.normalizer.lowercase` / `.strip_accents`, llama.cpp's defaults: both on),
 * punctuation and CJK characters split out; [CLS] A [SEP] (B [SEP], type 1) around the input.
 */
const PHANTOM = '\u2581';

export interface WordPieceParts {
  /** The document's normalizer, pre-tokenizer, model and decoder. */
  readonly body: object;
  readonly postProcessor: object;
  /** id → token text in WordPiece spelling (what decode joins). */
  readonly tokens: string[];
}

/** `cls`, `sep`, `unk`: their ids (llama.cpp's defaults 101, 102, 100 when the file names none). */
export function wordPieceDocument(
  phantomTokens: readonly string[],
  /** Control, unknown and user-defined tokens: spelled as they are. */
  asIs: (id: number) => boolean,
  ids: { readonly cls: number; readonly sep: number; readonly unk: number },
  normalizer: { readonly lowercase: boolean; readonly stripAccents: boolean },
): WordPieceParts {
  const tokens = phantomTokens.map((t, i) => {
    if (asIs(i)) return t;
    return t.startsWith(PHANTOM) ? t.slice(PHANTOM.length) : `##${t}`;
  });
  const vocab: Record<string, number> = {};
  tokens.forEach((t, i) => {
    if (!(t in vocab)) vocab[t] = i;
  });
  const cls = tokens[ids.cls]!;
  const sep = tokens[ids.sep]!;
  const body = {
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: normalizer.stripAccents,
      lowercase: normalizer.lowercase,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    model: {
      type: 'WordPiece',
      unk_token: tokens[ids.unk] ?? '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab,
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  };
  const postProcessor = {
    type: 'TemplateProcessing',
    single: [
      { SpecialToken: { id: cls, type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: sep, type_id: 0 } },
    ],
    pair: [
      { SpecialToken: { id: cls, type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: sep, type_id: 0 } },
      { Sequence: { id: 'B', type_id: 1 } },
      { SpecialToken: { id: sep, type_id: 1 } },
    ],
    special_tokens: {
      [cls]: { id: cls, ids: [ids.cls], tokens: [cls] },
      [sep]: { id: sep, ids: [ids.sep], tokens: [sep] },
    },
  };
  return { body, postProcessor, tokens };
}
