/**
 * The claims check.ts rests on when it lets a keyword through: xgrammar enforces it
 * exactly. Checked on the bare grammar (bare-grammar.ts), as rewrite.test.ts does for
 * the int32/int64 ranges:
 *
 * - integer `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum`: every candidate
 *   around each bound, digit by digit, is accepted exactly when it is in range;
 * - number ranges: the same candidates, plus decimals around each bound, plus exponents;
 *   no accepted text may lie outside the range (what JSON Schema validators compute, in
 *   doubles), and values well inside it are accepted;
 * - long string enums: exactly the values, no mixture of two of them.
 * What check.ts refuses, or the rewrites respell, because the library gets it wrong is shown
 * entry by entry in xgrammar-workarounds.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGrammarAddon } from '../../../native/native.js';
import { around, bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { checkJsonSchema } from './check.js';
import { rewriteForGrammar } from './rewrite.js';

const xg = loadGrammarAddon();

function compile(schema: object) {
  return xg.compileJsonSchema(bareCompiler(), JSON.stringify(schema), true);
}

interface Range {
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly exclusiveMaximum?: number;
}

function inRange(v: number, r: Range): boolean {
  return (
    (r.minimum === undefined || v >= r.minimum) &&
    (r.maximum === undefined || v <= r.maximum) &&
    (r.exclusiveMinimum === undefined || v > r.exclusiveMinimum) &&
    (r.exclusiveMaximum === undefined || v < r.exclusiveMaximum)
  );
}

const INTEGER_RANGES: Range[] = [
  { maximum: 120 },
  { minimum: 3 },
  { minimum: -37, maximum: 5 },
  { exclusiveMinimum: 3 },
  { exclusiveMaximum: 1000 },
  { exclusiveMinimum: -100, exclusiveMaximum: 99 },
  { minimum: 0, maximum: 65535 },
  { minimum: 1, maximum: 12 },
  { minimum: 1900, maximum: 2100 },
  { minimum: -2147483648, maximum: 2147483647 },
  { minimum: 18 },
  { maximum: -5 },
];

for (const range of INTEGER_RANGES) {
  test(`integer ${JSON.stringify(range)} is enforced exactly`, () => {
    const grammar = compile({ type: 'integer', ...range });
    const wrong: string[] = [];
    const bounds = Object.values(range) as number[];
    for (const b of bounds)
      for (const v of around(BigInt(b)))
        if (grammarAccepts(grammar, v.toString()) !== inRange(Number(v), range)) wrong.push(v.toString());
    assert.deepEqual(wrong, []);
    // Not integers, or not JSON: never ('-0' is 0, taken where 0 is in range).
    const odd = ['1.5', '1e2', '01', '', '-0'].filter(
      (t) => grammarAccepts(grammar, t) && !(t === '-0' && inRange(0, range)),
    );
    assert.deepEqual(odd, []);
    xg.dispose(grammar);
  });
}

/** Decimal texts around a bound: the integer candidates with fractions, and exponents. */
function decimalsAround(bound: number): string[] {
  const out = new Set<string>();
  const fractions = [
    '',
    '.0',
    '.5',
    '.05',
    '.9',
    '.99',
    '.999999',
    '.9999999',
    '.000001',
    '.0000001',
    '.1',
    '.25',
  ];
  for (const i of around(BigInt(Math.trunc(bound)))) for (const f of fractions) out.add(`${i}${f}`);
  const text = String(bound);
  for (const delta of [0, 1e-7, 1e-6, 1e-3, 0.01, 0.1, 0.5, 1, 10])
    for (const v of [bound - delta, bound + delta]) out.add(String(Number(v.toPrecision(12))));
  out.add(text);
  for (const e of ['e0', 'e1', 'e-1', 'E2', 'e+1', 'e-7', 'e10', 'e308', 'e309'])
    for (const m of ['1', '5', '1.5', '-1', '-2.5', '9.99', text]) out.add(m + e);
  return [...out].filter((t) => /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(t));
}

const NUMBER_RANGES: Range[] = [
  { minimum: 0 },
  { maximum: 1 },
  { minimum: 0, maximum: 1 },
  { minimum: -90, maximum: 90 },
  { minimum: 0.5 },
  { exclusiveMinimum: 0 },
  { exclusiveMaximum: 100 },
  { minimum: -1.25, maximum: 2.75 },
  { exclusiveMinimum: 0.1, exclusiveMaximum: 0.9 },
  { minimum: 0.000001 },
  { minimum: -1e6, maximum: 123456.5 },
];

/** Plain decimals (no exponent, at most 6 decimals, at most 15 digits): a range must take these. */
const PLAIN = /^-?(0|[1-9]\d{0,14})(\.\d{1,6})?$/;

for (const range of NUMBER_RANGES) {
  test(`number ${JSON.stringify(range)}: nothing out of range, every plain decimal in range`, () => {
    checkJsonSchema({ type: 'number', ...range }, 'f'); // check.ts lets it through
    const grammar = compile({ type: 'number', ...range });
    const wrong: string[] = [];
    const candidates = new Set<string>();
    for (const b of Object.values(range) as number[]) for (const t of decimalsAround(b)) candidates.add(t);
    for (const t of candidates) {
      const ok = grammarAccepts(grammar, t);
      if (ok && !inRange(Number(t), range)) wrong.push(`${t} accepted`);
      if (!ok && inRange(Number(t), range) && PLAIN.test(t) && t !== '-0') wrong.push(`${t} refused`);
    }
    assert.deepEqual(wrong, []);
    xg.dispose(grammar);
  });
}

for (const [format, max] of [
  ['double', Number.MAX_VALUE],
  ['float', 3.4028234663852886e38],
] as const)
  test(`format ${format}, rewritten as its finite range: only finite ${format}s, plain decimals taken`, () => {
    const grammar = compile(
      JSON.parse(rewriteForGrammar(JSON.stringify({ type: ['number', 'null'], format }))),
    );
    const wrong: string[] = [];
    for (const t of [
      ...decimalsAround(0),
      ...decimalsAround(-123.5),
      '1e308',
      '1e309',
      '-1e39',
      '3.5e38',
      'null',
    ]) {
      const ok = grammarAccepts(grammar, t);
      if (ok && t !== 'null' && !(Math.abs(Number(t)) <= max)) wrong.push(`${t} accepted`);
      if (!ok && (t === 'null' || PLAIN.test(t)) && t !== '-0') wrong.push(`${t} refused`);
    }
    assert.deepEqual(wrong, []);
    xg.dispose(grammar);
  });

test('fractional integer bounds, rewritten as the whole bounds they mean, are exact', () => {
  const range = { minimum: -2.5, exclusiveMaximum: 17.5 };
  const grammar = compile(JSON.parse(rewriteForGrammar(JSON.stringify({ type: 'integer', ...range }))));
  const wrong: string[] = [];
  for (const v of [...around(-2n), ...around(17n)])
    if (grammarAccepts(grammar, v.toString()) !== inRange(Number(v), range)) wrong.push(v.toString());
  assert.deepEqual(wrong, []);
  xg.dispose(grammar);
});

/** A 165-value enum from JSONSchemaBench (Github_trivial o65598, routes of administration). */
const ROUTES = (
  'arteriovenous fistula|arteriovenous graft|body cavity|auricular|buccal|caudal|colostomy|' +
  'conjunctival|cutaneous|dental|digestive tract|electro-osmosis|endocervical|endosinusial|' +
  'endotracheopulmonary|enteral|epidural|esophagostomy|extra-amniotic|extracorporeal|fistula|' +
  'gastro-intestinal stoma|gastroenteral|gastrostomy|gingival|ileostomy|hemodialysis|' +
  'infiltration|interstitial|intra-abdominal|intra-amniotic|intra-arterial|intra-articular|' +
  'intrabiliary|intrabronchial|intrabursal|intracameral|intracardiac|intracartilaginous|' +
  'intracaudal|intracavernous|intracavitary|intracerebral|intracerebroventricular|' +
  'intracisternal|intracolonic|intracorneal|intracoronal|intracoronary|' +
  'intracorporus cavernosum|intracranial|intradermal|intradiscal|intraductal|intraduodenal|' +
  'intradural|intraepicardial|intraepidermal|intraesophageal|intragastric|intragingival|' +
  'intrahepatic|intraileal|intrajejunal|intralesional|intralingual|intraluminal|' +
  'intralymphatic|intramammary|intramedullary|intrameningeal|intramural|intramuscular|' +
  'intramyometrial|intraneural|intranodal|intraocular|intraomentum|intraosseous|intraovarian|' +
  'intrapericardial|intraperitoneal|intrapleural|intraprostatic|intrapulmonary|intraruminal|' +
  'intrasinal|intraspinal|intrasternal|intrasynovial|intratendinous|intratesticular|' +
  'intrathecal|intrathoracic|intratubular|intratumor|intratympanic|intrauterine|' +
  'intravascular|intravenous|intravenous central|intravenous peripheral|' +
  'intraventricular - cardiac|intravesical|intravitreal|iontophoresis|irrigation|jejunostomy|' +
  'laryngeal|lower respiratory tract|mucous fistula|nasal|nasoduodenal|nasogastric|' +
  'nasojejunal|not applicable|occlusive dressing technique|ophthalmic|oral|orogastric|' +
  'oromucosal|oropharyngeal|otic|parenteral|paracervical|paravertebral|percutaneous|' +
  'periarticular|peribulbar|peridural|perineural|periodontal|periosteal|peritendinous|' +
  'periurethral|rectal|respiratory tract|retrobulbar|soft tissue|subarachnoid|' +
  'subconjunctival|subcutaneous|subgingival|sublesional|sublingual|submucosal|suborbital|' +
  'subretinal|subtendinous|surgical cavity|surgical drain|topical|transcervical|transdermal|' +
  'transendocardial|transmucosal|transplacental|transtracheal|transtympanic|transurethral|' +
  'tumor cavity|ureteral|urethral|urostomy|vaginal'
).split('|');

/**
 * Every complete text the grammar allows, found by walking it: a vocabulary of the printable
 * ASCII characters (one token each) plus a stop token, and at each prefix the next-token mask
 * says which characters may follow and whether the text may end. Exact for a finite language.
 */
function language(schema: object): string[] {
  const chars = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
  const stop = chars.length;
  const info = xg.createTokenizerInfo([...chars, '</s>'], 'raw', false, chars.length + 1, [stop]);
  const compiler = xg.createCompiler(info, 1);
  const grammar = xg.compileJsonSchema(compiler, JSON.stringify(schema), true);
  const mask = new Int32Array(xg.bitmaskSize(chars.length + 1));
  const out: string[] = [];
  const walk = (prefix: string) => {
    const m = xg.createMatcher(grammar, false);
    assert.equal(xg.acceptString(m, prefix), true);
    xg.fillNextTokenBitmask(m, mask);
    xg.dispose(m);
    const allowed = (t: number) => (mask[t >> 5]! >>> (t & 31)) & 1;
    const next = chars.filter((_, t) => allowed(t));
    if (allowed(stop)) out.push(prefix);
    for (const ch of next) walk(prefix + ch);
  };
  walk('');
  for (const h of [grammar, compiler, info]) xg.dispose(h);
  return out.sort();
}

test('a long string enum (165 values, JSONSchemaBench) allows exactly its values', () => {
  assert.equal(ROUTES.length, 165);
  assert.deepEqual(language({ enum: ROUTES }), ROUTES.map((v) => JSON.stringify(v)).sort());
  // Inside an object, beside other properties, as the benchmark has it.
  const sub = ROUTES.slice(100);
  assert.deepEqual(
    language({ type: 'object', properties: { r: { enum: sub } }, required: ['r'] }),
    sub.map((v) => `{"r": ${JSON.stringify(v)}}`).sort(),
  );
});
