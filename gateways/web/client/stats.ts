/**
 * Per-answer figures: time to first token and decode speed measured in the browser, token
 * counts and cached prompt tokens from the server's `usage`. No DOM; Node tests it.
 */
import type { Answer } from './answer.js';
import type { AnswerStats } from './request.js';

export function formatStats(s: AnswerStats): string {
  const parts: string[] = [];
  if (s.ttftMs !== null) parts.push(`TTFT ${Math.round(s.ttftMs)} ms`);
  if (s.tokensPerSecond !== null) parts.push(`${s.tokensPerSecond.toFixed(1)} tok/s`);
  if (s.completionTokens !== null) parts.push(`${s.completionTokens} tokens`);
  if (s.promptTokens !== null) parts.push(`prompt ${s.promptTokens} (cached ${s.cachedTokens ?? 0})`);
  if (s.finishReason) parts.push(s.finishReason);
  return parts.join(' · ');
}

/** t0: request sent; tFirst: first token arrived (null: none did); tEnd: stream ended (ms). */
export function statsOf(answer: Answer, t0: number, tFirst: number | null, tEnd: number): AnswerStats {
  const tokens = answer.usage?.completion_tokens ?? answer.contentChunks;
  const decodeS = tFirst === null ? 0 : (tEnd - tFirst) / 1000;
  return {
    ttftMs: tFirst === null ? null : tFirst - t0,
    // The first token's time is TTFT; the rate counts the tokens that came after it.
    tokensPerSecond: tokens > 1 && decodeS > 0 ? (tokens - 1) / decodeS : null,
    completionTokens: answer.usage?.completion_tokens ?? null,
    promptTokens: answer.usage?.prompt_tokens ?? null,
    cachedTokens: answer.usage?.prompt_tokens_details?.cached_tokens ?? null,
    finishReason: answer.finishReason,
  };
}
