/**
 * Generated schemas (test/fuzz/json-schemas.ts: every keyword of drafts 4 to 2020-12, alone
 * and combined, with recursion) through prepareSchema: it never throws (a refusal, never a
 * crash), and what it accepts compiles; where it says the grammar is exact, documents drawn
 * at random from the grammar (bare-grammar.ts `sampleDocument`) all validate with ajv against
 * the client's schema; where it asks for a check, the check agrees with ajv.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { loadGrammarAddon } from '../../../native/native.js';
import { jsonSchemas } from '../../../test/fuzz/json-schemas.js';
import { asciiGrammarCompiler, sampleDocument } from '../bare-grammar.js';
import { normalizeDraft } from './drafts.js';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema } from './prepare.js';

const xg = loadGrammarAddon();
const ajv = new Ajv2020({ strict: false, logger: false });
addFormats.default(ajv);

test('generated schemas: no throw; exact grammars write only valid documents; checks agree with ajv', () => {
  const schemas = fc.sample(jsonSchemas, { numRuns: 150, seed: 20250 });
  let state = 1;
  const random = () => (state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const seen = { exact: 0, checked: 0, refused: 0, docs: 0 };
  for (const s of schemas) {
    const p = prepareSchema(s, 'f');
    if ('refused' in p) {
      seen.refused++;
      continue;
    }
    if (p.check) seen.checked++;
    else seen.exact++;
    let grammar;
    try {
      grammar = xg.compileJsonSchema(asciiGrammarCompiler(), p.schema, true);
    } catch {
      continue; // a compile failure is a 4xx for the request (the library's own refusals)
    }
    const { $schema: _draft, ...body } = normalizeDraft(s) as Record<string, unknown>;
    ajv.removeSchema();
    const validate = ajv.compile(body);
    const check = p.check ? compileDocumentCheck(p.check.schema) : null;
    for (let k = 0; k < 4; k++) {
      const doc = sampleDocument(grammar, random);
      if (doc === null) continue;
      seen.docs++;
      const valid = validate(JSON.parse(doc)) as boolean;
      if (check) assert.equal(check(doc) === null, valid, `${JSON.stringify(s)}\n${doc}`);
      else assert.ok(valid, `exact grammar wrote an invalid document\n${JSON.stringify(s)}\n${doc}`);
    }
    xg.dispose(grammar);
  }
  // The generator reaches every outcome.
  assert.ok(seen.exact > 10 && seen.checked > 10 && seen.docs > 200, JSON.stringify(seen));
});
