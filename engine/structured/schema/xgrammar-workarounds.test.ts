/**
 * Each workaround of xgrammar-workarounds.ts is still needed, and works: on the bare grammar
 * (bare-grammar.ts), the schema as given is decided wrongly for at least one of its texts
 * (should a release fix that, this fails and names the entry to retire); after prepareSchema
 * every text is decided as ajv decides it, or the schema is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { loadGrammarAddon } from '../../../native/native.js';
import { bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema } from './prepare.js';
import { XGRAMMAR_WORKAROUNDS } from './xgrammar-workarounds.js';

const xg = loadGrammarAddon();
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

/** Whether the library, given `schema` text, takes each text (all false when it does not compile). */
function decided(schema: string, texts: readonly string[]): boolean[] {
  let grammar;
  try {
    grammar = xg.compileJsonSchema(bareCompiler(), schema, true);
  } catch {
    return texts.map(() => false);
  }
  try {
    return texts.map((t) => grammarAccepts(grammar, t));
  } finally {
    xg.dispose(grammar);
  }
}

for (const w of XGRAMMAR_WORKAROUNDS) {
  test(`xgrammar ${w.xgrammar} workaround '${w.id}': still needed, and exact after preparation`, () => {
    const texts = w.texts.map(([t]) => t);
    const valid = w.texts.map(([, v]) => v);
    // The expectations are JSON Schema's (ajv's), not ours.
    const check = ajv.compile(w.schema);
    w.texts.forEach(([t, v]) => {
      let doc: unknown;
      let parses = true;
      try {
        doc = JSON.parse(t);
      } catch {
        parses = false;
      }
      assert.equal(parses && check(doc), v, `${w.id}: ${t} is ${v ? 'valid' : 'invalid'}`);
    });
    const raw = decided(JSON.stringify(w.schema), texts);
    assert.ok(
      raw.some((got, i) => got !== valid[i]),
      `${w.id}: xgrammar now decides every text right without the workaround (${w.remedy}): it can go`,
    );
    // Grammar only (OpenAI strict): refused, or exact.
    const strict = prepareSchema(w.schema, { grammarOnly: true });
    if (!('refused' in strict)) {
      assert.equal(strict.check, null);
      assert.deepEqual(decided(strict.schema, texts), valid, `${w.id}: after preparation`);
    }
    // By default: exact, or a grammar that accepts every valid text and a check that catches
    // every invalid one it accepts.
    const prepared = prepareSchema(w.schema);
    assert.ok(!('refused' in prepared), `${w.id}: refused by default`);
    if ('refused' in prepared) return;
    const byGrammar = decided(prepared.schema, texts);
    if (prepared.check === null) {
      assert.deepEqual(byGrammar, valid, `${w.id}: after preparation`);
      return;
    }
    const postCheck = compileDocumentCheck(prepared.check.schema);
    texts.forEach((t, i) => {
      if (valid[i]) assert.ok(byGrammar[i], `${w.id}: the relaxed grammar refuses the valid ${t}`);
      const presented = byGrammar[i] && postCheck(t) === null;
      assert.equal(presented, valid[i], `${w.id}: ${t} after grammar and check`);
    });
  });
}
