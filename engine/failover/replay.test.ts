import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineError } from '../errors.js';
import type { FinishEvent, GenerateEvent, TokenEvent } from '../types.js';
import { ReplayGuard } from './replay.js';

const tok = (ids: number[], text: string, index = 0): TokenEvent => ({
  type: 'token',
  requestId: 'r',
  index,
  tokenIds: ids,
  text,
});
const fin = (ids: number[], text: string, index = 0): FinishEvent => ({
  type: 'finish',
  requestId: 'r',
  index,
  reason: 'length',
  text,
  tokenIds: ids,
  cumulativeLogprob: 0,
  usage: { promptTokens: 3, completionTokens: ids.length, cachedPromptTokens: 0 },
  timings: { queueMs: 0, prefillMs: 0, decodeMs: 0, ttftMs: 0 },
  seed: 7,
});

/** What the caller is handed for each attempt's events, attempts in turn. */
function handed(attempts: GenerateEvent[][]): GenerateEvent[] {
  const g = new ReplayGuard();
  const out: GenerateEvent[] = [];
  attempts.forEach((events, i) => {
    if (i > 0) g.nextAttempt();
    for (const ev of events) {
      const e = g.pass(ev);
      if (e) out.push(e);
    }
  });
  return out;
}

test('a retry hands over only what comes after the tokens the caller already holds', () => {
  const out = handed([
    [tok([1], 'a'), tok([2], 'b')],
    [tok([1], 'a'), tok([2], 'b'), tok([3], 'c'), fin([1, 2, 3], 'abc')],
  ]);
  assert.deepEqual(
    out.map((e) => (e.type === 'token' ? e.text : `finish:${e.text}`)),
    ['a', 'b', 'c', 'finish:abc'],
  );
});

test('an event that straddles the joint is cut there (tokens, text and logprobs)', () => {
  const lp = (id: number) => ({ tokenId: id, text: String(id), logprob: -id, top: [] });
  const out = handed([
    [tok([1], 'a'), tok([2], 'b')],
    [{ ...tok([1, 2, 3], 'abc'), logprobs: [lp(1), lp(2), lp(3)] }, fin([1, 2, 3], 'abc')],
  ]);
  const rest = out[2] as TokenEvent;
  assert.deepEqual(rest.tokenIds, [3]);
  assert.equal(rest.text, 'c');
  assert.deepEqual(rest.logprobs, [lp(3)]);
});

test('text held back for a split character joins the same way on both engines', () => {
  const out = handed([
    [tok([10], ''), tok([11], 'é')],
    [tok([10], ''), tok([11], 'é'), tok([12], '!'), fin([10, 11, 12], 'é!')],
  ]);
  assert.deepEqual(
    out.filter((e) => e.type === 'token').map((e) => e.text),
    ['', 'é', '!'],
  );
});

test('a choice already finished is not finished twice; another choice goes on', () => {
  const out = handed([
    [tok([1], 'a', 0), fin([1], 'a', 0), tok([5], 'x', 1)],
    [tok([1], 'a', 0), fin([1], 'a', 0), tok([5], 'x', 1), tok([6], 'y', 1), fin([5, 6], 'xy', 1)],
  ]);
  assert.equal(out.filter((e) => e.type === 'finish').length, 2);
  assert.deepEqual(
    out.filter((e) => e.index === 1 && e.type === 'token').map((e) => e.text),
    ['x', 'y'],
  );
});

test('a retry whose tokens differ from what was handed over fails the request', () => {
  assert.throws(
    () =>
      handed([
        [tok([1], 'a'), tok([2], 'b')],
        [tok([1], 'a'), tok([9], 'z')],
      ]),
    (e: Error) =>
      e instanceof EngineError &&
      e.code === 'GENERATION_FAILED' &&
      /token 1 is 9, the first engine's was 2/.test(e.message),
  );
  assert.throws(
    () =>
      handed([
        [tok([1], 'a'), tok([2], 'b')],
        [tok([1], 'a'), fin([1], 'a')],
      ]),
    /ended sooner/,
  );
});

test('without a retry every event passes as it is', () => {
  const events = [tok([1], 'a'), tok([2], 'b'), fin([1, 2], 'ab')];
  assert.deepEqual(handed([events]), events);
});
