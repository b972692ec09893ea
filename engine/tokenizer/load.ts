/**
 * Finds a model's tokenizer: a Hugging Face directory (tokenizer.json + tokenizer_config.json,
 * generation_config.json, chat_template.jinja) or a GGUF file's embedded vocabulary.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { GgufValue } from '../../native/native.js';
import { builtinChatTemplate } from './builtin-templates.js';
import { ggufTokenizerSpec, postProcessor } from './gguf-vocab.js';
import { HfTokenizer, type AddedTokenJson, type Tokenizer, type TokenizerDocument } from './hf-tokenizer.js';

export async function loadTokenizer(modelPath: string): Promise<Tokenizer> {
  if (typeof modelPath !== 'string' || modelPath.length === 0) {
    throw new Error('model path: must be a non-empty string');
  }
  let isDirectory: boolean;
  try {
    isDirectory = statSync(modelPath).isDirectory();
  } catch {
    throw new Error(`model path ${modelPath}: no such file or directory`);
  }
  if (isDirectory) return loadHfDirectory(modelPath);
  if (!hasGgufMagic(modelPath)) {
    throw new Error(
      `model path ${modelPath}: not a GGUF file (no GGUF magic) and not a Hugging Face directory`,
    );
  }
  // Imported here, not at the top: the native addon is only needed for GGUF files.
  const { readGgufMetadata } = await import('../../native/native.js');
  return tokenizerFromGgufMetadata(readGgufMetadata(modelPath), modelPath);
}

/** Builds the tokenizer of a GGUF file from its metadata (as `readGgufMetadata` returns it). */
export async function tokenizerFromGgufMetadata(
  meta: Record<string, GgufValue>,
  source: string,
): Promise<HfTokenizer> {
  const spec = ggufTokenizerSpec(meta, source);
  return HfTokenizer.create(
    { json: spec.tokenizerJson, addedTokens: spec.addedTokens, tokens: spec.tokens },
    {
      bosToken: spec.bosTokenId,
      eosToken: spec.eosTokenId,
      extraEosTokenIds: spec.endOfTurnIds,
      // A file without a template: its architecture's own format when Prism knows it.
      chatTemplate: spec.chatTemplate ?? builtinChatTemplate(meta['general.architecture']),
    },
    source,
  );
}

function hasGgufMagic(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    return readSync(fd, magic, 0, 4, 0) === 4 && magic.toString('latin1') === 'GGUF';
  } finally {
    closeSync(fd);
  }
}

function readJson(path: string): Record<string, unknown> | null {
  if (!existsSync(path)) return null;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${path}: must hold a JSON object`);
  return value as Record<string, unknown>;
}

/** tokenizer_config.json spells a special token as its text or as an AddedToken object {content}. */
function tokenText(value: unknown, path: string, key: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  throw new Error(`${path}: ${key} must be a string or an object with "content"`);
}

/** `chat_template` is a string, or a list of named templates of which "default" is the one used for chat. */
function chatTemplateOf(value: unknown, path: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value as { name?: unknown; template?: unknown }[];
    const chosen = named.find((t) => t && t.name === 'default') ?? named[0];
    if (chosen && typeof chosen.template === 'string') return chosen.template;
  }
  throw new Error(`${path}: chat_template must be a string or a list of {name, template}`);
}

function idList(value: unknown): number[] {
  if (typeof value === 'number' && Number.isInteger(value)) return [value];
  if (Array.isArray(value))
    return value.filter((v): v is number => typeof v === 'number' && Number.isInteger(v));
  return [];
}

async function loadHfDirectory(dir: string): Promise<HfTokenizer> {
  const tokenizerPath = join(dir, 'tokenizer.json');
  if (!existsSync(tokenizerPath)) {
    throw new Error(
      `${dir}: no tokenizer.json (a Hugging Face model directory needs one; slow-tokenizer-only directories are not supported)`,
    );
  }
  const configPath = join(dir, 'tokenizer_config.json');
  const config = readJson(configPath) ?? {};
  const generationPath = join(dir, 'generation_config.json');
  const generation = readJson(generationPath) ?? {};

  // Where transformers looks, in its order of precedence: a separate .jinja file, then
  // chat_template.json, then tokenizer_config.json.
  let chatTemplate: string | null = null;
  const jinjaPath = join(dir, 'chat_template.jinja');
  const templateJsonPath = join(dir, 'chat_template.json');
  if (existsSync(jinjaPath)) chatTemplate = readFileSync(jinjaPath, 'utf8');
  else if (existsSync(templateJsonPath))
    chatTemplate = chatTemplateOf(readJson(templateJsonPath)?.chat_template, templateJsonPath);
  else chatTemplate = chatTemplateOf(config.chat_template, configPath);

  const bosText = tokenText(config.bos_token, configPath, 'bos_token');
  const eosText = tokenText(config.eos_token, configPath, 'eos_token');
  const generationEos = idList(generation.eos_token_id);
  const generationBos = idList(generation.bos_token_id);

  return HfTokenizer.create(
    withConfiguredSpecialTokens(readFileSync(tokenizerPath, 'utf8'), config, bosText, eosText, tokenizerPath),
    {
      bosToken: bosText ?? generationBos[0] ?? null,
      eosToken: eosText ?? generationEos[0] ?? null,
      extraEosTokenIds: generationEos,
      chatTemplate,
    },
    dir,
  );
}

interface TokenizerJsonShape {
  added_tokens?: AddedTokenJson[];
  decoder?: unknown;
  model?: { vocab?: Record<string, number> | [string, number][] };
  post_processor?: unknown;
}

/** A token's id in a tokenizer.json document (added tokens, then the model vocabulary). */
function idInDocument(doc: TokenizerJsonShape, text: string): number | null {
  const added = doc.added_tokens?.find((t) => t.content === text);
  if (added) return added.id;
  const vocab = doc.model?.vocab;
  if (Array.isArray(vocab)) {
    const index = vocab.findIndex((entry) => Array.isArray(entry) && entry[0] === text);
    return index >= 0 ? index : null;
  }
  return vocab && Object.hasOwn(vocab, text) ? vocab[text] : null;
}

/**
 * tokenizer_config.json's `add_bos_token` / `add_eos_token`, when present, decide what
 * encode adds (transformers rebuilds tokenizer.json's post-processor from them, e.g. for a
 * Llama 2 directory whose tokenizer.json has none); without them tokenizer.json's own
 * post-processor stands.
 */
function withConfiguredSpecialTokens(
  json: string,
  config: Record<string, unknown>,
  bosText: string | null,
  eosText: string | null,
  path: string,
): TokenizerDocument {
  let doc: TokenizerJsonShape;
  try {
    doc = JSON.parse(json) as TokenizerJsonShape;
  } catch (error) {
    throw new Error(`${path}: tokenizer.json is not valid JSON: ${(error as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new Error(`${path}: must hold a JSON object`);
  const addedTokens = doc.added_tokens ?? [];
  const tokens = tokenTableOf(doc);
  const addBos = config.add_bos_token;
  const addEos = config.add_eos_token;
  if (typeof addBos !== 'boolean' && typeof addEos !== 'boolean') return { json, addedTokens, tokens };
  const bosId = addBos === true && bosText !== null ? idInDocument(doc, bosText) : null;
  const eosId = addEos === true && eosText !== null ? idInDocument(doc, eosText) : null;
  const configured = postProcessor(
    bosId !== null ? bosText : null,
    bosId,
    eosId !== null ? eosText : null,
    eosId,
  );
  // Nothing to add, and the file's post-processor adds no tokens either (none, or ByteLevel,
  // which only adjusts offsets): keep the document as it is rather than re-serialize it.
  const current = doc.post_processor as { type?: string } | null | undefined;
  if (configured === null && (!current || current.type === 'ByteLevel')) return { json, addedTokens, tokens };
  doc.post_processor = configured;
  return { json: JSON.stringify(doc), addedTokens, tokens };
}

/**
 * id → token text from the document itself (model vocabulary, then added tokens), which is
 * what the library's getVocab(true) returns, without a 150k-entry round trip through it.
 * Undefined when the model's vocabulary is not a plain map or list (the library is asked then).
 */
function tokenTableOf(doc: TokenizerJsonShape): string[] | undefined {
  const vocab = doc.model?.vocab;
  if (!vocab || typeof vocab !== 'object') return undefined;
  const tokens: string[] = [];
  if (Array.isArray(vocab)) {
    // Unigram: [piece, score] pairs, id = position.
    for (let i = 0; i < vocab.length; i++) {
      if (!Array.isArray(vocab[i]) || typeof vocab[i][0] !== 'string') return undefined;
      tokens[i] = vocab[i][0];
    }
  } else {
    for (const [token, id] of Object.entries(vocab)) {
      if (!Number.isInteger(id) || id < 0) return undefined;
      tokens[id] = token;
    }
  }
  for (const t of doc.added_tokens ?? []) {
    if (!Number.isInteger(t.id) || t.id < 0 || typeof t.content !== 'string') return undefined;
    tokens[t.id] = t.content;
  }
  // A hole in the ids: let the library say what it has there.
  for (let i = 0; i < tokens.length; i++) if (tokens[i] === undefined) return undefined;
  return tokens;
}
