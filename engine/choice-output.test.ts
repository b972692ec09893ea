import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChoiceOutput } from './choice-output.js';
import { resolveParams } from './sampling-params.js';
import { CharTokenizer, EOS } from './testing/char-tokenizer.js';

const tok = new CharTokenizer();
const ids = (s: string) => tok.encode(s, { addSpecialTokens: false });
const params = (p: object) => resolveParams(p, { vocabSize: 100, maxNewTokensCap: 100, maxN: 4 });

function feed(c: ChoiceOutput, tokens: number[], limitAt = Infinity) {
  const deltas: string[] = [];
  tokens.forEach((t, i) => {
    if (c.reason === null) deltas.push(c.accept(t, -0.5, i, i + 1 >= limitAt).delta);
  });
  return deltas;
}

test('EOS stops without adding text; ignore_eos keeps going', () => {
  const c = new ChoiceOutput(0, 1, tok, params({}), new Set([EOS]));
  assert.deepEqual(feed(c, [...ids('ab'), EOS, ...ids('c')]), ['a', 'b', '']);
  assert.equal(c.reason, 'stop');
  assert.deepEqual(c.tokenIds, [...ids('ab'), EOS]);
  assert.equal(c.cumulativeLogprob, -1.5);
  const d = new ChoiceOutput(
    0,
    1,
    tok,
    params({ ignoreEos: true, skipSpecialTokens: false }),
    new Set([EOS]),
  );
  feed(d, [...ids('ab'), EOS, ...ids('c')]);
  assert.equal(d.text, 'ab</s>c');
  assert.equal(d.reason, null);
});

test('stop strings are held back, then cut; the length limit flushes held text', () => {
  const c = new ChoiceOutput(0, 1, tok, params({ stop: ['xyz'] }), new Set());
  assert.deepEqual(feed(c, ids('abxyq xyz!')), ['a', 'b', '', '', 'xyq', ' ', '', '', '']);
  assert.equal(c.text, 'abxyq ');
  assert.equal(c.reason, 'stop');
  const d = new ChoiceOutput(0, 1, tok, params({ stop: ['xyz'] }), new Set());
  assert.deepEqual(feed(d, ids('abxy'), 4), ['a', 'b', '', 'xy']);
  assert.equal(d.reason, 'length');
  assert.equal(d.gaps, 3);
});
