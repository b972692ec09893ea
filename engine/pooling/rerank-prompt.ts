/**
 * Qwen3-Reranker's way to score a (query, document) pair with a decoder, as its model card
 * writes it: the pair inside a fixed chat prompt, and the score is P("yes") against "no" at
 * the last position, softmax over the two logits. The prompt's head and tail are tokenized
 * apart from the body, and only the body is cut to fit (the card's own code does the same).
 */
import { invalidArgument } from '../errors.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { PassInput, PassOutput } from './backend.js';

const PREFIX =
  '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. ' +
  'Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n';
const SUFFIX = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';
const DEFAULT_RERANK_INSTRUCTION =
  'Given a web search query, retrieve relevant passages that answer the query';

export class RerankPrompt {
  private constructor(
    private readonly tokenizer: Tokenizer,
    private readonly instruction: string,
    private readonly prefix: number[],
    private readonly suffix: number[],
    /** The logits the score compares, [no, yes]. */
    readonly classTokens: readonly [number, number],
  ) {}

  static async create(tokenizer: Tokenizer, instruction = DEFAULT_RERANK_INSTRUCTION): Promise<RerankPrompt> {
    const id = async (word: string): Promise<number> => {
      const ids = await tokenizer.encodeAsync(word, { addSpecialTokens: false });
      if (ids.length !== 1)
        throw new Error(`the reranker's answer "${word}" is not one token of this vocabulary`);
      return ids[0]!;
    };
    const [prefix, suffix, no, yes] = await Promise.all([
      tokenizer.encodeAsync(PREFIX, { addSpecialTokens: false }),
      tokenizer.encodeAsync(SUFFIX, { addSpecialTokens: false }),
      id('no'),
      id('yes'),
    ]);
    return new RerankPrompt(tokenizer, instruction, prefix, suffix, [no, yes]);
  }

  async encode(
    at: string,
    query: string,
    document: string,
    o: { readonly maxLength: number; readonly truncate: boolean; readonly output: PassOutput },
  ): Promise<PassInput> {
    const body = await this.tokenizer.encodeAsync(
      `<Instruct>: ${this.instruction}\n<Query>: ${query}\n<Document>: ${document}`,
      {
        addSpecialTokens: false,
      },
    );
    const room = o.maxLength - this.prefix.length - this.suffix.length;
    if (body.length > room && !o.truncate)
      throw invalidArgument(
        at,
        `${body.length + this.prefix.length + this.suffix.length} tokens exceed the model's maximum of ${o.maxLength} (ask for truncation to cut it)`,
      );
    return {
      output: o.output,
      ids: Int32Array.from([...this.prefix, ...body.slice(0, Math.max(0, room)), ...this.suffix]),
    };
  }
}
