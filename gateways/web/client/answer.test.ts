/** Folding OpenAI stream chunks into one answer (pure; the browser test covers the page). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addChunk, emptyAnswer } from './answer.js';

test('chat chunks: text, logprobs, finish reason, usage with cached tokens', () => {
  const a = emptyAnswer();
  addChunk(a, { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  assert.equal(a.contentChunks, 0);
  addChunk(a, {
    choices: [
      {
        index: 0,
        delta: { content: 'Hel' },
        logprobs: {
          content: [{ token: 'Hel', logprob: -0.1, top_logprobs: [{ token: 'Hi', logprob: -2 }] }],
        },
      },
    ],
  });
  addChunk(a, { choices: [{ index: 0, delta: { content: 'lo' }, logprobs: null }] });
  addChunk(a, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  addChunk(a, {
    choices: [],
    usage: { prompt_tokens: 9, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } },
  });
  assert.equal(a.text, 'Hello');
  assert.equal(a.contentChunks, 2);
  assert.equal(a.finishReason, 'stop');
  assert.equal(a.usage?.prompt_tokens_details?.cached_tokens, 0);
  assert.deepEqual(a.tokens, [{ token: 'Hel', logprob: -0.1, top: [{ token: 'Hi', logprob: -2 }] }]);
});

test('tool-call deltas are assembled per index', () => {
  const a = emptyAnswer();
  addChunk(a, {
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        },
      },
    ],
  });
  addChunk(a, {
    choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }],
  });
  addChunk(a, {
    choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] } }],
  });
  addChunk(a, {
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index: 1, id: 'call_2', function: { name: 'f', arguments: '{}' } }] },
      },
    ],
  });
  addChunk(a, { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  assert.deepEqual(a.toolCalls, [
    { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    { id: 'call_2', type: 'function', function: { name: 'f', arguments: '{}' } },
  ]);
  assert.equal(a.finishReason, 'tool_calls');
});

test('completion chunks with their logprobs shape, and an error sent inside the stream', () => {
  const a = emptyAnswer();
  addChunk(a, {
    choices: [
      {
        index: 0,
        text: ' upon',
        logprobs: {
          tokens: [' upon'],
          token_logprobs: [-0.5],
          top_logprobs: [{ ' upon': -0.5, ' a': -1.5 }],
        },
      },
    ],
  });
  assert.equal(a.text, ' upon');
  assert.deepEqual(a.tokens[0].top, [
    { token: ' upon', logprob: -0.5 },
    { token: ' a', logprob: -1.5 },
  ]);
  addChunk(a, { error: { message: 'engine failed', type: 'server_error' } });
  assert.equal(a.error, 'engine failed');
  const b = emptyAnswer();
  addChunk(b, { error: 'plain' });
  assert.equal(b.error, 'plain');
});
