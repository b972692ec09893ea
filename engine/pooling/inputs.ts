/**
 * A pooling request's inputs as the passes take them: text tokenized by the model's
 * tokenizer (lower-cased first where sentence-transformers' do_lower_case says so), pairs with
 * their token types, a reranking decoder's pairs inside its prompt, and every input held to
 * the model's limit: cut by the request's truncation, or refused naming the input.
 */
import { invalidArgument } from '../errors.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { PassInput, PassOutput } from './backend.js';
import type { RerankPrompt } from './rerank-prompt.js';
import type { PoolingCard, PoolingInput, PoolingRequest } from './types.js';

export interface InputContext {
  readonly card: PoolingCard;
  readonly tokenizer: Tokenizer;
  readonly lowerCase: boolean;
  /** Token types the model tells apart (a cross-encoder's pair: 2; XLM-RoBERTa: 1). */
  readonly tokenTypes: number;
  /** A reranking decoder's prompt (Qwen3-Reranker); absent for encoders. */
  readonly rerank?: RerankPrompt;
  /** score on an embedder: each text of a pair is embedded alone and the two compared. */
  readonly scoreByCosine: boolean;
}

/** What each pass input computes for a task. */
function passOutput(task: PoolingRequest['task'], ctx: InputContext): PassOutput {
  if (task === 'tokens') return 'tokens';
  if (task === 'embed' || (task === 'score' && ctx.scoreByCosine)) return 'pooled';
  return 'scores';
}

/**
 * The pass inputs of a request, in order: one per input, or for a cosine score two per pair
 * (its first text, then its second).
 */
export async function prepareInputs(
  req: PoolingRequest,
  ctx: InputContext,
  field = 'input',
): Promise<PassInput[]> {
  const output = passOutput(req.task, ctx);
  const limit = ctx.card.maxInputTokens;
  const maxLength = Math.min(req.truncate?.maxTokens ?? limit, limit);
  const direction = req.truncate?.direction ?? 'right';
  const addSpecialTokens = req.addSpecialTokens ?? true;
  const text = (t: string): string => (ctx.lowerCase ? t.toLowerCase() : t);
  const tooLong = (at: string, n: number) =>
    invalidArgument(at, `${n} tokens exceed the model's maximum of ${limit} (ask for truncation to cut it)`);

  const encode = async (at: string, a: string, b: string | null): Promise<PassInput> => {
    const e = await ctx.tokenizer.encodePooling(text(a), b === null ? null : text(b), {
      addSpecialTokens,
      maxLength: req.truncate ? maxLength : 0,
      direction,
    });
    if (!req.truncate && e.untruncatedLength > limit) throw tooLong(at, e.untruncatedLength);
    if (e.ids.length === 0)
      throw invalidArgument(at, 'tokenizes to no tokens (add special tokens, or give some text)');
    const types = ctx.tokenTypes >= 2 ? Int32Array.from(e.typeIds) : undefined;
    return { output, ids: Int32Array.from(e.ids), ...(types ? { typeIds: types } : {}) };
  };

  const one = async (input: PoolingInput, i: number): Promise<PassInput[]> => {
    const at = `${field}[${i}]`;
    if ('ids' in input) {
      let ids = input.ids;
      if (ids.length > maxLength) {
        if (!req.truncate) throw tooLong(at, ids.length);
        ids = direction === 'left' ? ids.slice(ids.length - maxLength) : ids.slice(0, maxLength);
      }
      return [{ output, ids: Int32Array.from(ids) }];
    }
    if ('text' in input) return [await encode(at, input.text, null)];
    const [a, b] = input.pair;
    if (ctx.rerank)
      return [
        await ctx.rerank.encode(at, a, b, { maxLength: limit, truncate: req.truncate !== undefined, output }),
      ];
    if (ctx.scoreByCosine) return [await encode(`${at}[0]`, a, null), await encode(`${at}[1]`, b, null)];
    return [await encode(at, a, b)];
  };
  return (await Promise.all(req.inputs.map(one))).flat();
}
