/**
 * The claims schema-check.ts rests on when it lets a keyword through: xgrammar enforces it
 * exactly. Checked on the bare grammar (bare-grammar.ts), as schema-rewrite.test.ts does for
 * the int32/int64 ranges:
 *
 * - integer `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum`: every candidate
 *   around each bound, digit by digit, is accepted exactly when it is in range;
 * - number ranges: the same candidates, plus decimals around each bound, plus exponents;
 *   no accepted text may lie outside the range (what JSON Schema validators compute, in
 *   doubles), and values well inside it are accepted;
 * - long string enums: exactly the values, no mixture of two of them;
 * - the keywords schema-check.ts still refuses: the counterexample that shows why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGrammarAddon } from '../../native/native.js';
import { bareCompiler, grammarAccepts } from './bare-grammar.js';

const xg = loadGrammarAddon();

function compile(schema: object) {
  return xg.compileJsonSchema(bareCompiler(), JSON.stringify(schema), true);
}

/** Integers around a bound: every digit position set to 0-9 under the bound's prefix. */
function around(bound: bigint): bigint[] {
  const digits = (bound < 0n ? -bound : bound).toString();
  const sign = bound < 0n ? -1n : 1n;
  const out = new Set<bigint>([0n, 1n, -1n]);
  for (let i = 0; i < digits.length; i++)
    for (let d = 0; d <= 9; d++)
      for (const tail of [
        '0'.repeat(digits.length - i - 1),
        '9'.repeat(digits.length - i - 1),
        digits.slice(i + 1),
      ])
        out.add(sign * BigInt(digits.slice(0, i) + d + tail));
  for (let k = -12n; k <= 12n; k++) out.add(bound + k);
  out.add(sign * BigInt('1' + '0'.repeat(digits.length)));
  out.add(-sign * BigInt(digits));
  return [...out];
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
    for (const t of ['1.5', '1e2', '-0', '01', '']) if (grammarAccepts(grammar, t)) wrong.push(t);
    assert.deepEqual(
      wrong.filter((t) => t !== '-0' || !inRange(0, range)),
      [],
    );
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
  { minimum: 1e-7 },
];

for (const range of NUMBER_RANGES) {
  test(`number ${JSON.stringify(range)}: nothing out of range is accepted`, () => {
    const grammar = compile({ type: 'number', ...range });
    const outside: string[] = [];
    const candidates = new Set<string>();
    for (const b of Object.values(range) as number[]) for (const t of decimalsAround(b)) candidates.add(t);
    let accepted = 0;
    for (const t of candidates)
      if (grammarAccepts(grammar, t)) {
        accepted++;
        if (!inRange(Number(t), range)) outside.push(t);
      }
    assert.deepEqual(outside, []);
    assert.ok(accepted > 0);
    xg.dispose(grammar);
  });
}

test('a 27-value string enum (JSONSchemaBench) takes exactly its values', () => {
  const values = [
    'abdominal wall',
    'anal canal',
    'appendix',
    'ascending colon',
    'caecum',
    'descending colon',
    'duodenum',
    'gastro-oesophageal junction',
    'hepatic flexure',
    'ileum',
    'jejuno-intestinal stoma',
    'jejunum',
    'lower oesophagus',
    'mid oesophagus',
    'oesophagus',
    'pylorus',
    'rectosigmoid junction',
    'rectum',
    'sigmoid colon',
    'small intestine',
    'splenic flexure',
    'stomach',
    'terminal ileum',
    'transverse colon',
    'upper oesophagus',
    'colonic stoma',
    'ileal stoma',
  ];
  const grammar = compile({ enum: values });
  for (const v of values) assert.equal(grammarAccepts(grammar, JSON.stringify(v)), true, v);
  // Every prefix of one value joined to every suffix of another (the earlier version's bug).
  const wrong: string[] = [];
  for (const a of values)
    for (const b of values)
      for (let i = 1; i < a.length; i++)
        for (let j = 1; j < b.length; j++) {
          const mixed = a.slice(0, i) + b.slice(j);
          if (!values.includes(mixed) && grammarAccepts(grammar, JSON.stringify(mixed))) wrong.push(mixed);
        }
  assert.deepEqual(wrong, []);
  xg.dispose(grammar);
});
