/**
 * Whether a request's output fits its sequence. Limits that come from the model's context
 * (no maxSeqLen configured, EngineOptions) follow vLLM: a prompt plus an explicit
 * max_new_tokens longer than the context is refused, naming the field; without an explicit
 * one the output takes what fits. Limits from a MindIE config file keep MindIE's meaning: the
 * output is cut at maxSeqLen.
 */
import { invalidArgument } from './errors.js';
import type { ResolvedEngineOptions } from './options.js';
import type { ResolvedParams } from './sampling-params.js';

export function checkOutputFits(
  params: Pick<ResolvedParams, 'maxNewTokens' | 'maxNewTokensExplicit'>,
  promptTokens: number,
  options: Pick<ResolvedEngineOptions, 'maxSeqLen' | 'contextFromModel'>,
): void {
  if (!options.contextFromModel || !params.maxNewTokensExplicit) return;
  if (promptTokens + params.maxNewTokens <= options.maxSeqLen) return;
  throw invalidArgument(
    'params.max_new_tokens',
    `the prompt's ${promptTokens} tokens plus ${params.maxNewTokens} new tokens exceed the model's context of ` +
      `${options.maxSeqLen} tokens: ask for at most ${options.maxSeqLen - promptTokens} (max_tokens)`,
  );
}
