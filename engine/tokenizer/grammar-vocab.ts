/**
 * What a grammar engine (xgrammar) needs to know about a vocabulary: each token's raw string
 * as the model file spells it, and how to turn those strings into bytes. Byte-level BPE
 * (GPT-2 style, `Ġ` for space) and SentencePiece with byte fallback (`▁` for space,
 * `<0x0A>` byte tokens) spell text differently; xgrammar decodes both given the kind.
 * Special tokens get the empty string: they are not text, so a grammar must never allow
 * them inside a document (xgrammar treats empty tokens as special).
 */
export interface GrammarVocab {
  readonly tokens: readonly string[];
  readonly vocabType: 'byte_level' | 'byte_fallback' | 'raw';
  /** The tokenizer puts a space before the text (SentencePiece's prefix space). */
  readonly prependSpace: boolean;
}

interface TokenizerJson {
  decoder?: { type?: string; decoders?: { type?: string }[] } | null;
  model?: { byte_fallback?: boolean };
  normalizer?: {
    type?: string;
    prepend?: string;
    normalizers?: { type?: string; prepend?: string }[];
  } | null;
  pre_tokenizer?: { type?: string; prepend_scheme?: string; add_prefix_space?: boolean } | null;
}

export function grammarVocab(
  json: string,
  tokens: readonly (string | undefined)[],
  isSpecial: (id: number) => boolean,
): GrammarVocab {
  const doc = JSON.parse(json) as TokenizerJson;
  const decoders = [doc.decoder, ...(doc.decoder?.decoders ?? [])].map((d) => d?.type);
  const vocabType = decoders.includes('ByteLevel')
    ? 'byte_level'
    : doc.model?.byte_fallback || decoders.includes('ByteFallback')
      ? 'byte_fallback'
      : 'raw';
  const normalizers = [doc.normalizer, ...(doc.normalizer?.normalizers ?? [])];
  const prependSpace =
    normalizers.some((n) => n?.type === 'Prepend' && n.prepend === '▁') ||
    (doc.pre_tokenizer?.type === 'Metaspace' && doc.pre_tokenizer.prepend_scheme !== 'never');
  return {
    tokens: tokens.map((t, id) => (t === undefined || isSpecial(id) ? '' : t)),
    vocabType,
    prependSpace,
  };
}
