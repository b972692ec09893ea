/**
 * Tokenizers, chat templates and incremental detokenization.
 *
 *   const tokenizer = await loadTokenizer('models/x.gguf' | 'path/to/hf-dir');
 *   tokenizer.encode(text) / decode(ids) / applyChatTemplate(messages) / createDetokenizer()
 *
 * One engine (Hugging Face `tokenizers`) runs every vocabulary: a directory's tokenizer.json
 * as is, a GGUF file's vocabulary converted to a tokenizer.json document (gguf-vocab.ts).
 */
export type { Tokenizer } from './hf-tokenizer.js';
export { loadTokenizer } from './load.js';
