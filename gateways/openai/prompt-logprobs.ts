/**
 * Prompt logprobs in the OpenAI-compatible responses (the engine computes them:
 * engine/prompt-logprobs/): the legacy completions' echo shape, where the prompt's tokens come
 * first in `choices[].logprobs` (the first token's logprob null), and vLLM's `prompt_logprobs`
 * (a list, null for the first token, then per token a map from token id to its logprob, rank
 * and text: the prompt token's own entry and the top alternatives).
 */
import type { PromptTokenLogprob, TokenLogprob } from '../../engine/api.js';
import { invalid } from '../shared/http-error.js';
import { nullable } from '../shared/schema.js';

/** vLLM's field, as chat and completions take it (-1, vLLM's whole vocabulary, is refused). */
export const promptLogprobsSchema = {
  prompt_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
};

/** What the engine is asked for: the most alternatives either field wants; undefined: none. */
export function promptLogprobsParam(
  body: { prompt_logprobs?: number | null; stream?: boolean | null },
  echoTop?: number,
): number | undefined {
  const vllm = body.prompt_logprobs ?? undefined;
  if (vllm === undefined && echoTop === undefined) return undefined;
  if (body.stream)
    throw invalid(
      vllm !== undefined ? 'prompt_logprobs' : 'echo',
      vllm !== undefined
        ? 'is not supported with stream: true'
        : 'with logprobs (or max_tokens 0) is not supported with stream: true',
    );
  return Math.max(vllm ?? 0, echoTop ?? 0);
}

/** vLLM's `prompt_logprobs`: `top` alternatives per token besides the token's own entry. */
export function vllmPromptLogprobs(list: readonly PromptTokenLogprob[], top: number): (object | null)[] {
  return list.map((t) => {
    if (t.logprob === null) return null;
    const entries: [string, object][] = [
      [String(t.tokenId), { logprob: t.logprob, rank: t.rank, decoded_token: t.text }],
    ];
    t.top.slice(0, top).forEach((a, i) => {
      if (a.tokenId !== t.tokenId)
        entries.push([String(a.tokenId), { logprob: a.logprob, rank: i + 1, decoded_token: a.text }]);
    });
    return Object.fromEntries(entries);
  });
}

/**
 * The legacy completions logprobs object: the prompt's tokens (with `echo`; their text offsets
 * from 0, the first token's logprob and alternatives null, each other's alternatives with the
 * token itself, as vLLM gives them), then the generated ones from `offset` (where the generated
 * text starts), `top` alternatives each.
 */
export function completionLogprobs(
  prompt: readonly PromptTokenLogprob[],
  generated: readonly TokenLogprob[],
  offset: number,
  top: number,
): object {
  const textOffset: number[] = [];
  let at = 0;
  for (const t of prompt) {
    textOffset.push(at);
    at += t.text.length;
  }
  at = offset;
  for (const t of generated) {
    textOffset.push(at);
    at += t.text.length;
  }
  const alternatives = (t: PromptTokenLogprob | TokenLogprob) =>
    t.top.slice(0, top).map((a): [string, number] => [a.text, a.logprob]);
  return {
    tokens: [...prompt, ...generated].map((t) => t.text),
    token_logprobs: [...prompt, ...generated].map((t) => t.logprob),
    top_logprobs: [
      ...prompt.map((t) =>
        t.logprob === null ? null : Object.fromEntries([[t.text, t.logprob], ...alternatives(t)]),
      ),
      ...generated.map((t) => Object.fromEntries(alternatives(t))),
    ],
    text_offset: textOffset,
  };
}
