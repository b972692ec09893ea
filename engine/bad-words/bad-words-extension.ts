/**
 * The bad_words request feature (engine/extension.ts): the words are tokenized while the
 * prompt is (off the event loop), and the request's sequences carry their token sequences;
 * the step plan suppresses what they ban at each sample (engine/step-plan.ts).
 */
import { EngineError } from '../errors.js';
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

  /**
   * `suppresses`: the device's sampler takes a plan's suppressed tokens (its backend's
   * minTokens capability); where it does not, bad_words is refused, never ignored.
   */
  constructor(
    private readonly tokenizer: EngineTokenizer,
    private readonly suppresses: boolean,
    private readonly device: string,
  ) {}

  check(_request: GenerateRequest, params: ResolvedParams): BadWordsPart | undefined {
    if (params.badWords.length === 0) return undefined;
    if (!this.suppresses)
      throw new EngineError(
        'UNIMPLEMENTED',
        `bad_words is not supported on device ${this.device}`,
        'params.bad_words',
      );
    return { words: params.badWords, ids: [] };
  }

  async prepare(part: BadWordsPart): Promise<void> {
    part.ids = await badWordTokens(this.tokenizer, part.words);
  }

  plan(plan: RequestPlan, part: BadWordsPart | undefined): void {
    if (part && part.ids.length > 0) plan.sampling = { ...plan.sampling, badWords: part.ids };
  }
}
