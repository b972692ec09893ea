/**
 * The tool-call grammars token by token on the default model's real vocabulary (the grammar
 * thread, as a request uses it): whatever tokens the model's tokenizer cuts a call into, a
 * valid call is accepted and the first token that breaks the tool's schema is refused. This
 * is what makes `auto` safe although the default 135M model rarely opens a call by itself
 * (so the end-to-end tests force calls instead: test/gateways-forced-tools.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ensureDefaultModel } from '../default-model.js';
import { GrammarService } from '../structured/grammar-service.js';
import { loadTokenizer, type Tokenizer } from '../tokenizer/index.js';
import type { ChatTool, ToolChoice } from '../types.js';
import { toolCallConstraint } from './call-grammar.js';
import { toolParserByName } from './registry.js';

let tok: Tokenizer;
let svc: GrammarService;
const hermes = toolParserByName('hermes')!;
const tools: ChatTool[] = [
  {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

before(async () => {
  tok = await loadTokenizer(ensureDefaultModel());
  svc = new GrammarService({
    vocab: tok.grammarVocab(),
    vocabSize: tok.vocabSize,
    stopTokenIds: tok.eosTokenIds,
  });
});
after(async () => {
  await svc?.close();
});

/** Feeds `text`'s tokens one by one; returns how many were accepted before the first refusal, and the end state. */
async function feed(
  choice: ToolChoice,
  text: string,
): Promise<{ accepted: number; total: number; done: boolean }> {
  const c = toolCallConstraint({ tools, toolChoice: choice }, hermes, false)!;
  const { key } = await svc.compile(c);
  const g = svc.createMatcher(key);
  await g.pending;
  const ids = tok.encode(text, { addSpecialTokens: false });
  let accepted = 0;
  for (const id of ids) {
    g.accept([id]);
    await g.pending;
    if (g.error !== null) break;
    accepted++;
  }
  // The document may end here when a stop token is allowed next.
  const eos = tok.eosTokenIds[0]!;
  const done = g.error === null && g.mask !== null && (g.mask[eos >> 5]! & (1 << (eos & 31))) !== 0;
  svc.free(g);
  return { accepted, total: ids.length, done };
}

const call = (args: string) => `<tool_call>\n{"name": "get_weather", "arguments": ${args}}\n</tool_call>`;

describe('tool-call grammars on the default vocabulary', () => {
  test('auto: prose, a valid call, prose again; the document may end after each', async () => {
    const text = `Let me check.\n${call('{"city": "Paris"}')}\nDone.`;
    const r = await feed('auto', text);
    assert.deepEqual([r.accepted, r.done], [r.total, true]);
  });

  test('auto: once the call is open, a property the schema lacks is refused', async () => {
    const valid = `Let me check.\n${call('{"city": "Paris"}')}`;
    const r = await feed('auto', `Let me check.\n${call('{"town": "Paris"}')}`);
    assert.ok(r.accepted < r.total, 'refused');
    // Refused inside the arguments, not before: the prose and the call's opening passed.
    const prefix = tok.encode('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {', {
      addSpecialTokens: false,
    }).length;
    assert.ok(r.accepted >= prefix - 1, `${r.accepted} of ${r.total}`);
    assert.equal((await feed('auto', valid)).accepted, tok.encode(valid, { addSpecialTokens: false }).length);
  });

  test('required: a call and nothing else; prose first is refused at once; the end needs the call', async () => {
    const r = await feed('required', call('{"city": "Paris"}'));
    assert.deepEqual([r.accepted, r.done], [r.total, true]);
    assert.equal((await feed('required', 'Sure! ' + call('{"city": "Paris"}'))).accepted, 0);
    const half = await feed('required', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par');
    assert.deepEqual([half.accepted, half.done], [half.total, false]);
  });

  test('a named function: another name is refused', async () => {
    const r = await feed({ function: 'get_weather' }, '<tool_call>\n{"name": "get_time", "arguments": {}}');
    assert.ok(r.accepted < r.total);
  });
});
