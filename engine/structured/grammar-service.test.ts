/**
 * The grammar thread as the engine uses it (grammar-service.ts), over a small raw vocabulary
 * (no model): rollback restores the masks of earlier states exactly; a grammar whose state
 * allows no token fails its sequence instead of handing the sampler an empty mask.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GrammarService } from './grammar-service.js';
import { checkConstraint } from './validate.js';

/** Tokens 0..5 are text; 6 is the stop token. */
const TOKENS = ['{', '}', 'a', '"', ':', ' ', ''];
const STOP = 6;
let svc: GrammarService;

before(() => {
  svc = new GrammarService({
    vocab: { tokens: TOKENS, vocabType: 'raw', prependSpace: false },
    vocabSize: TOKENS.length,
    stopTokenIds: [STOP],
  });
});
after(async () => {
  await svc?.close();
});

test('a grammar that allows no token fails the sequence with a reason, without a mask', async () => {
  // `x` never ends: no string matches, so the very first mask is empty.
  const { key } = await svc.compile({ kind: 'grammar', ebnf: 'root ::= x\nx ::= "a" x' });
  const g = svc.createMatcher(key);
  await g.pending;
  // Here the grammar still allows "a" forever (an infinite loop, not a dead end).
  assert.equal(g.error, null);
  const dead = await svc.compile({ kind: 'grammar', ebnf: 'root ::= "a" x\nx ::= x "a"' });
  const d = svc.createMatcher(dead.key);
  await d.pending;
  d.accept([2]);
  await d.pending;
  assert.match(d.error ?? '', /allows no token here/);
  assert.equal(d.mask, null);
  svc.free(g);
  svc.free(d);
});

/** The tokens of `text` in the one-character vocabulary. */
const ids = (text: string) => [...text].map((ch) => TOKENS.indexOf(ch));

test('rollback: accept k tokens, roll back j, and the mask (and the rest of the walk) is as before', async () => {
  const { key } = await svc.compile(
    checkConstraint({
      kind: 'json_schema',
      schema: JSON.stringify({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }),
    }),
  );
  const doc = [...ids('{"a": "aa"}'), STOP];
  const g = svc.createMatcher(key);
  await g.pending;
  const masks = [Array.from(g.mask!)];
  for (const t of doc) {
    g.accept([t]);
    await g.pending;
    assert.equal(g.error, null);
    masks.push(Array.from(g.mask!));
  }
  assert.equal(g.terminated, true);
  let at = doc.length;
  const walkTo = (k: number) => {
    if (at > k) g.rollback(at - k);
    else if (at < k) g.accept(doc.slice(at, k));
    at = k;
  };
  for (const [k, j] of [
    [doc.length, 1], // from the terminated state
    [doc.length - 1, 4],
    [5, 5], // back to the start
    [3, 2],
  ] as const) {
    walkTo(k);
    await g.pending;
    assert.deepEqual(Array.from(g.mask ?? []), masks[k], `at ${k}`);
    g.rollback(j);
    at -= j;
    await g.pending;
    assert.equal(g.error, null);
    assert.equal(g.terminated, false);
    assert.deepEqual(Array.from(g.mask!), masks[k - j], `k=${k} j=${j}`);
  }
  // Rolling back past the start fails the matcher (xgrammar keeps only what was accepted).
  g.rollback(doc.length + 1);
  await g.pending;
  assert.match(g.error ?? '', /grammar failed/);
  svc.free(g);
});
