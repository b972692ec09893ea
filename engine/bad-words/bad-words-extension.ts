/**
 * The bad_words request feature (engine/extension.ts): the words are tokenized while the
 * prompt is (off the event loop), and the request's sequences carry their token sequences;
 * the step plan suppresses what they ban at each sample (engine/step-plan.ts).
 */
import type { RequestExtension, RequestPlan } from '../extension.js';
import type { EngineTokenizer } from '../prompt.js';
import type { ResolvedParams } from '../sampling-params.js';
import type { GenerateRequest } from '../types.js';
import { badWordTokens } from './bad-words.js';

interface BadWordsPart {
  readonly words: readonly string[];
  ids: number[][];
}

export class BadWordsExtension implements RequestExtension<BadWordsPart> {
  readonly name = 'bad-words';

  constructor(private readonly tokenizer: EngineTokenizer) {}

  check(_request: GenerateRequest, params: ResolvedParams): BadWordsPart | undefined {
    return params.badWords.length > 0 ? { words: params.badWords, ids: [] } : undefined;
  }

  async prepare(part: BadWordsPart): Promise<void> {
    part.ids = await badWordTokens(this.tokenizer, part.words);
  }

  plan(plan: RequestPlan, part: BadWordsPart | undefined): void {
    if (part && part.ids.length > 0) plan.sampling = { ...plan.sampling, badWords: part.ids };
  }
}
