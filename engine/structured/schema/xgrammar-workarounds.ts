/**
 * What the schema preparation works around in the grammar library, one entry each, tagged
 * with the xgrammar release it was found in (the pinned one, 0.2.8; scripts/build-native.mjs).
 * Each entry carries a schema and texts that show the library's behaviour: compiled as given,
 * the library decides at least one text wrongly. xgrammar-workarounds.test.ts checks, for
 * every entry, that this is still so (it fails once a release fixes it, naming the entry, so
 * the workaround can go) and that after preparation (prepare.ts) each text is decided right,
 * or the schema is refused. The code of each workaround cites its entry's `id`.
 */

export interface XgrammarWorkaround {
  readonly id: string;
  /** The xgrammar release whose behaviour this works around. */
  readonly xgrammar: '0.2.8';
  /** What the library does with such a schema. */
  readonly behaviour: string;
  /** What the preparation does instead, and where. */
  readonly remedy: string;
  readonly schema: object;
  /** Texts and whether each is valid for `schema` (JSON Schema's meaning; the test checks with ajv). */
  readonly texts: readonly (readonly [string, boolean])[];
}

export const XGRAMMAR_WORKAROUNDS: readonly XgrammarWorkaround[] = [
  {
    id: 'siblings-beside-anyof',
    xgrammar: '0.2.8',
    behaviour: 'a schema with anyOf/oneOf compiles from its branches alone: keywords beside them are dropped',
    remedy: 'rewrite: the keywords are merged into each branch (branch-merge.ts)',
    schema: {
      type: 'object',
      properties: { x: { type: 'integer' } },
      required: ['x'],
      anyOf: [{ properties: { e: { type: 'string' } }, required: ['e'] }],
    },
    texts: [
      ['{"e": "s"}', false],
      ['{"x": 1, "e": "s"}', true],
    ],
  },
  {
    id: 'allof-first-member',
    xgrammar: '0.2.8',
    behaviour: 'an allOf of several schemas keeps only its first member (with a warning on stderr)',
    remedy: 'rewrite: allOf folds into one schema (branch-merge.ts)',
    schema: {
      allOf: [{ $ref: '#/$defs/base' }, { properties: { b: { type: 'integer' } }, required: ['b'] }],
      $defs: { base: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } },
    },
    texts: [
      ['{"a": "x"}', false],
      ['{"a": "x", "b": 1}', true],
    ],
  },
  {
    id: 'untyped-keywords',
    xgrammar: '0.2.8',
    behaviour: 'type-specific keywords (minLength, maximum, ...) apply only under a "type"',
    remedy: 'rewrite: the one type the keywords imply is written (implicit.ts)',
    schema: { minLength: 2 },
    texts: [
      ['"x"', false],
      ['"xy"', true],
    ],
  },
  {
    id: 'untyped-bounds',
    xgrammar: '0.2.8',
    behaviour: 'numeric bounds without "type" are ignored',
    remedy: 'rewrite: "type": "number" is written (implicit.ts)',
    schema: { maximum: 3 },
    texts: [
      ['4', false],
      ['3', true],
    ],
  },
  {
    id: 'required-unlisted',
    xgrammar: '0.2.8',
    behaviour: 'a required name missing from "properties" is not required (and never written)',
    remedy: 'rewrite: the name is added to properties with the schema a validator applies (implicit.ts)',
    schema: { type: 'object', required: ['a'] },
    texts: [
      ['{}', false],
      ['{"a": 1}', true],
    ],
  },
  {
    id: 'not-type',
    xgrammar: '0.2.8',
    behaviour: '"not" is ignored',
    remedy: 'rewrite: not {type} becomes the types it leaves (implicit.ts); other forms are refused',
    schema: { not: { type: 'object' }, anyOf: [{ type: 'string' }, { type: 'object' }] },
    texts: [
      ['{}', false],
      ['"x"', true],
    ],
  },
  {
    id: 'int32-format',
    xgrammar: '0.2.8',
    behaviour: 'format int32/int64 is ignored',
    remedy: 'rewrite: the format becomes its range (rewrite.ts)',
    schema: { type: 'integer', format: 'int32' },
    texts: [
      ['2147483648', false],
      ['2147483647', true],
    ],
  },
  {
    id: 'byte-format',
    xgrammar: '0.2.8',
    behaviour: 'format byte (base64) is ignored',
    remedy: 'rewrite: the format becomes a base64 pattern (rewrite.ts)',
    schema: { type: 'string', format: 'byte' },
    texts: [
      ['"a!"', false],
      ['"YQ=="', true],
    ],
  },
  {
    id: 'pattern-drops-lengths',
    xgrammar: '0.2.8',
    behaviour: 'minLength/maxLength beside a pattern are dropped',
    remedy:
      'rewrite: folded into a pattern that repeats one character class (pattern-length.ts); refused beside any other pattern (check.ts)',
    schema: { type: 'string', pattern: '^[a-z_.]+$', maxLength: 3 },
    texts: [
      ['"abcd"', false],
      ['"a.c"', true],
    ],
  },
  {
    id: 'format-drops-lengths',
    xgrammar: '0.2.8',
    behaviour: 'minLength/maxLength beside a format the library writes (email, date, ...) are dropped',
    remedy: 'refused (check.ts)',
    schema: { type: 'string', format: 'email', maxLength: 5 },
    texts: [['"abcdef@b.com"', false]],
  },
  {
    id: 'empty-number-range',
    xgrammar: '0.2.8',
    behaviour: 'an empty number range writes no value at all ({"a": } is accepted)',
    remedy:
      'refused under grammarOnly, checked on the document otherwise (check.ts checkRange); a range no real number is in is refused in every mode (empty-values.ts)',
    schema: {
      type: 'object',
      properties: { a: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 0.000001 } },
      required: ['a'],
    },
    texts: [['{"a": }', false]],
  },
  {
    id: 'number-bound-grid',
    xgrammar: '0.2.8',
    behaviour: 'number bounds are moved to a grid of 10^-6 (ranges write at most 6 decimals)',
    remedy: 'refused past 6 decimals (check.ts checkRange)',
    schema: { type: 'number', minimum: 0.1234567 },
    texts: [['0.1234568', true]],
  },
  {
    id: 'multipleof-beside-range',
    xgrammar: '0.2.8',
    behaviour: 'an integer multipleOf beside bounds is dropped',
    remedy: 'refused (check.ts multipleOfEnforced)',
    schema: { type: 'integer', multipleOf: 3, minimum: 0 },
    texts: [
      ['4', false],
      ['3', true],
    ],
  },
  {
    id: 'oneof-as-anyof',
    xgrammar: '0.2.8',
    behaviour: 'oneOf is compiled as anyOf: a document matching two branches is accepted',
    remedy: 'refused unless the branches are provably exclusive (oneof-disjoint.ts)',
    schema: { oneOf: [{ type: 'string' }, { type: 'string', maxLength: 2 }] },
    texts: [
      ['"ab"', false],
      ['"abc"', true],
    ],
  },
  {
    id: 'anchor-ref',
    xgrammar: '0.2.8',
    behaviour: 'a $ref to an anchor (#name) or another document compiles as any JSON value',
    remedy: 'refused (check.ts)',
    schema: {
      type: 'object',
      properties: { a: { $ref: '#node' } },
      required: ['a'],
      $defs: { n: { $anchor: 'node', type: 'integer' } },
    },
    texts: [
      ['{"a": [true, "x"]}', false],
      ['{"a": 1}', true],
    ],
  },
  {
    id: 'pattern-lookaround',
    xgrammar: '0.2.8',
    behaviour: 'a lookahead in a pattern is dropped ((?=a)b takes "b")',
    remedy: 'refused (check.ts hasLookaround)',
    schema: { type: 'string', pattern: '^(?=a)\\w+$' },
    texts: [
      ['"b"', false],
      ['"ab"', true],
    ],
  },
  {
    id: 'pattern-inner-anchor',
    xgrammar: '0.2.8',
    behaviour:
      'a pattern is matched against the whole string with every ^ and $ ignored (a warning where one is not at an end): /^[0-9]{4}$/ takes "/1234/"',
    remedy:
      'pattern-anchors.ts: anchors that may hold elsewhere than at the ends are refused under grammarOnly, otherwise checked on the document (check.ts); a pattern that matches nothing is refused (empty-values.ts)',
    schema: { type: ['string', 'null'], pattern: '/^[0-9]{4}$/' },
    texts: [
      ['"/1234/"', false],
      ['null', true],
    ],
  },
  {
    id: 'enum-ignores-siblings',
    xgrammar: '0.2.8',
    behaviour:
      'a schema with enum or const compiles from its values alone: type, bounds, pattern beside them are dropped',
    remedy: 'rewrite: the values are filtered by the keywords beside them (enum-siblings.ts)',
    schema: { type: 'string', enum: ['a', 'bb', 3], minLength: 2 },
    texts: [
      ['"a"', false],
      ['3', false],
      ['"bb"', true],
    ],
  },
  {
    id: 'prefixitems-true',
    xgrammar: '0.2.8',
    behaviour: 'a `true` among prefixItems fails to compile ("must be an array of objects or booleans")',
    remedy: 'rewrite: `true` becomes `{}`, a `false` at position i caps maxItems at i (rewrite.ts)',
    schema: { type: 'array', prefixItems: [true, { type: 'string' }], items: false },
    texts: [
      ['[1, "a"]', true],
      ['[1, 2]', false],
    ],
  },
  {
    id: 'ignored-keywords',
    xgrammar: '0.2.8',
    behaviour: 'uniqueItems, contains, if/then/else, dependencies and number multipleOf are ignored',
    remedy: 'refused under grammarOnly (check.ts REFUSED_KEYWORDS); otherwise checked on the document',
    schema: { type: 'array', items: { type: 'integer' }, uniqueItems: true },
    texts: [
      ['[1, 1]', false],
      ['[1, 2]', true],
    ],
  },
];
