/**
 * Tokenizers, chat templates and incremental detokenization.
 *
 *   const tokenizer = await loadTokenizer('models/x.gguf' | 'path/to/hf-dir');
 *   tokenizer.encode(text) / decode(ids) / applyChatTemplate(messages) / createDetokenizer()
 *
 * One engine (Hugging Face `tokenizers`) runs every vocabulary: a directory's tokenizer.json
 * as is, a GGUF file's vocabulary converted to a tokenizer.json document (gguf-vocab.ts).
 */
export type { PoolingEncodeOptions, PoolingEncoding, Tokenizer, TokenizerFacts } from './hf-tokenizer.js';
export type { IncrementalDetokenizer } from './detokenizer.js';
export type { GrammarVocab } from './grammar-vocab.js';
export type { ChatMessage } from '../types.js';
export { loadTokenizer, tokenizerFromGgufMetadata } from './load.js';
export { FALLBACK_CHATML_TEMPLATE, renderChatTemplate } from './chat-template.js';
