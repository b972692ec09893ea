/**
 * The grammar thread as the engine uses it (grammar-service.ts), over a small raw vocabulary
 * (no model): a grammar whose state allows no token fails its sequence instead of handing the
 * sampler an empty mask.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GrammarService } from './grammar-service.js';

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
  svc.accept(d, 2);
  await d.pending;
  assert.match(d.error ?? '', /allows no token here/);
  assert.equal(d.mask, null);
  svc.free(g);
  svc.free(d);
});
