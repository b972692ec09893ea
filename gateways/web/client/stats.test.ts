/** Per-answer stats: TTFT, decode rate after the first token, usage figures. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyAnswer } from './answer.js';
import { formatStats, statsOf } from './stats.js';

test('TTFT from send to first token; tok/s over the tokens after the first; cached tokens from usage', () => {
  const a = {
    ...emptyAnswer(),
    contentChunks: 9,
    finishReason: 'length',
    usage: { prompt_tokens: 30, completion_tokens: 11, prompt_tokens_details: { cached_tokens: 16 } },
  };
  const s = statsOf(a, 1000, 1250, 3250);
  assert.equal(s.ttftMs, 250);
  assert.equal(s.tokensPerSecond, 5); // 10 tokens after the first, in 2 s
  assert.equal(formatStats(s), 'TTFT 250 ms · 5.0 tok/s · 11 tokens · prompt 30 (cached 16) · length');
});

test('without usage the streamed chunks count; no token at all gives no rate', () => {
  const s = statsOf({ ...emptyAnswer(), contentChunks: 5 }, 0, 100, 1100);
  assert.equal(s.tokensPerSecond, 4);
  assert.equal(s.completionTokens, null);
  const none = statsOf(emptyAnswer(), 0, null, 500);
  assert.equal(none.ttftMs, null);
  assert.equal(none.tokensPerSecond, null);
  assert.equal(formatStats(none), '');
});
