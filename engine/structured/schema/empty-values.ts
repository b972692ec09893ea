/**
 * Subschemas that no value satisfies: an empty numeric range (`minimum: 5, maximum: 3` on
 * integers, exclusive bounds that leave nothing), `minLength` above `maxLength` (and the same
 * for items and properties), more required properties than `maxProperties`, a required
 * property whose schema is `false`, an `enum` none of whose values passes the keywords beside
 * it, a pattern that matches no string (pattern-anchors.ts: `/^[0-9]{4}$/` pasted with its
 * slashes).
 *
 * Where a document must hold such a value — the root, and from there a required property of
 * an object, an `allOf` member, a `$ref` target, an item an array's `minItems` asks for — no
 * document matches the schema: refused in every mode (prepare.ts), naming where and the rule,
 * before anything is compiled. The relaxed preparation would otherwise drop the contradicting
 * keywords and leave them to a document check no document passes (every attempt sampled, and
 * failed), and the grammar cannot write such a value either (xgrammar 0.2.8 writes `{"a": }`
 * for an empty integer range). vLLM's and llama.cpp's grammar compilers refuse such ranges too.
 *
 * Where a document can do without it, the schema is satisfiable and is not refused for it:
 * an optional property that no value satisfies is a property that must not appear, and the
 * relaxed preparation says so exactly (`false`, which check.ts and rewrite.ts handle); the
 * rest (one branch of anyOf, `items` of an array that may be empty, ...) is left to check.ts
 * as before (refused under `grammarOnly`, otherwise checked on the document). Only what the
 * client wrote is looked at, and only what is reachable from the root (not `not`, `if`,
 * `contains` and the like, where an empty schema is a legitimate "never").
 */
import { filterEnum } from './enum-siblings.js';
import { impliedType } from './implicit.js';
import { isSchemaObject, type Schema } from './node.js';
import { anchorPlacement } from './pattern-anchors.js';
import { foldSchemaLengths } from './pattern-length.js';
import { refuseAlways } from './refusal.js';
import { INTEGER_FORMAT_RANGES } from './rewrite.js';

/** Throws a final refusal at the first subschema no value satisfies where a document needs a value. */
export function refuseEmptySubschemas(root: unknown, field: string): void {
  visit(root, field, true, (node, path) => {
    const empty = emptyRule(node);
    if (empty)
      throw refuseAlways(
        empty.keyword ? `${path}.${empty.keyword}` : path,
        `${empty.reason}: no document matches the schema`,
      );
  });
}

/**
 * In place, on the relaxed preparation's copy: every optional property that no value
 * satisfies becomes `false` (it must not appear: the same meaning, said so that the grammar
 * never writes it). The number of properties so marked.
 */
export function forbidEmptyProperties(root: unknown): number {
  let marked = 0;
  visit(root, '', false, (node) => {
    if (!isSchemaObject(node.properties)) return;
    const required = Array.isArray(node.required) ? node.required.map(String) : [];
    for (const [name, sub] of Object.entries(node.properties))
      if (!required.includes(name) && isSchemaObject(sub) && emptyRule(sub)) {
        node.properties[name] = false;
        marked++;
      }
  });
  return marked;
}

/**
 * Calls `each` on every schema object reachable from `root` (each once; `$ref`s followed
 * to local targets). `needed`: only where a document must hold a value (see above);
 * otherwise every place that can hold one.
 */
function visit(
  root: unknown,
  field: string,
  needed: boolean,
  each: (node: Schema, path: string) => void,
): void {
  const seen = new Set<unknown>();
  const todo: [unknown, string][] = [[root, field]];
  while (todo.length > 0) {
    const [node, path] = todo.pop()!;
    if (!isSchemaObject(node) || seen.has(node)) continue;
    seen.add(node);
    each(node, path);
    const types = typesOf(node);
    const objects = types?.every((t) => t === 'object') ?? false;
    const arrays = types?.every((t) => t === 'array') ?? false;
    const required = Array.isArray(node.required) ? node.required.map(String) : [];
    if (isSchemaObject(node.properties))
      for (const [name, sub] of Object.entries(node.properties))
        if (!needed || (objects && required.includes(name))) todo.push([sub, `${path}.properties.${name}`]);
    if (Array.isArray(node.allOf)) node.allOf.forEach((sub, i) => todo.push([sub, `${path}.allOf[${i}]`]));
    const minItems = arrays && typeof node.minItems === 'number' ? node.minItems : 0;
    const prefix = Array.isArray(node.prefixItems) ? (node.prefixItems as unknown[]) : [];
    prefix.forEach((sub, i) => {
      if (!needed || i < minItems) todo.push([sub, `${path}.prefixItems[${i}]`]);
    });
    if (Array.isArray(node.items)) {
      // draft-04 tuple form, should one reach here
      node.items.forEach((sub, i) => {
        if (!needed || i < minItems) todo.push([sub, `${path}.items[${i}]`]);
      });
    } else if (!needed || minItems > prefix.length) todo.push([node.items, `${path}.items`]);
    if (!needed) {
      if (isSchemaObject(node.patternProperties))
        for (const [name, sub] of Object.entries(node.patternProperties))
          todo.push([sub, `${path}.patternProperties.${name}`]);
      for (const k of ['anyOf', 'oneOf'])
        if (Array.isArray(node[k]))
          (node[k] as unknown[]).forEach((sub, i) => todo.push([sub, `${path}.${k}[${i}]`]));
      todo.push([node.additionalProperties, `${path}.additionalProperties`]);
    }
    if (typeof node.$ref === 'string') {
      const target = localTarget(root, node.$ref);
      if (target) todo.push([target.node, `${field}${target.path}`]);
    }
  }
}

interface EmptyRule {
  /** The keyword that empties the node (its path is `path.keyword`), or '' for the node. */
  readonly keyword: string;
  readonly reason: string;
}

/** Why no value satisfies `s` by its own keywords, or undefined. */
function emptyRule(s: Schema): EmptyRule | undefined {
  if (Array.isArray(s.enum) && s.enum.length === 0) return { keyword: 'enum', reason: 'is an empty list' };
  const values = filterEnum(s);
  if (values && 'values' in values && values.values.length === 0)
    return { keyword: '', reason: 'no value of enum/const satisfies the keywords beside it' };
  const types = typesOf(s);
  if (types === undefined) return undefined;
  const only = (...family: string[]) => types.every((t) => family.includes(t));
  if (only('number', 'integer')) {
    const range = emptyRange(s, only('integer'));
    if (range) return range;
  }
  if (only('string')) {
    const counts = inverted(s, 'minLength', 'maxLength', 'string');
    if (counts) return counts;
    if (typeof s.pattern === 'string' && anchorPlacement(s.pattern) === 'nothing')
      return {
        keyword: 'pattern',
        reason: `matches no string: it needs a character before '^' (the start of the string) or after '$' (its end)${
          /^\/.*\/[a-z]*$/.test(s.pattern)
            ? ' — a JSON Schema pattern has no /.../ delimiters or flags: write it without them'
            : ''
        }`,
      };
    const folded = foldSchemaLengths(s);
    if (folded && 'empty' in folded)
      return { keyword: 'pattern', reason: 'no string matches the pattern within minLength/maxLength' };
  }
  if (only('array')) {
    const counts = inverted(s, 'minItems', 'maxItems', 'array');
    if (counts) return counts;
    const minItems = num(s.minItems);
    if (Array.isArray(s.prefixItems) && s.items === false && minItems !== undefined)
      if (minItems > s.prefixItems.length)
        return {
          keyword: 'minItems',
          reason: 'is greater than the number of prefixItems while items is false: no array satisfies both',
        };
  }
  if (only('object')) {
    const counts = inverted(s, 'minProperties', 'maxProperties', 'object');
    if (counts) return counts;
    const required = Array.isArray(s.required) ? [...new Set(s.required.map(String))] : [];
    const props = isSchemaObject(s.properties) ? s.properties : {};
    const max = num(s.maxProperties);
    if (max !== undefined && required.length > max)
      return {
        keyword: 'maxProperties',
        reason: "is less than the number of 'required' properties: no object satisfies both",
      };
    const min = num(s.minProperties);
    if (min !== undefined && s.additionalProperties === false && s.patternProperties === undefined)
      if (min > Object.keys(props).length)
        return {
          keyword: 'minProperties',
          reason:
            'is greater than the number of properties while additionalProperties is false: no object satisfies both',
        };
    const forbidden = required.find((name) => props[name] === false);
    if (forbidden !== undefined)
      return {
        keyword: `properties.${forbidden}`,
        reason: "is false (no value) while 'required' names it: no object satisfies both",
      };
  }
  return undefined;
}

/** The node's types (`integer` kept apart), its implied one, or undefined when any type goes. */
function typesOf(s: Schema): string[] | undefined {
  if (s.type === undefined) {
    const implied = impliedType(s);
    return implied === null || implied === 'mixed' ? undefined : [implied];
  }
  const types = Array.isArray(s.type) ? s.type : [s.type];
  return types.every((t) => typeof t === 'string') ? (types as string[]) : undefined;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function inverted(s: Schema, lo: string, hi: string, what: string): EmptyRule | undefined {
  const a = num(s[lo]);
  const b = num(s[hi]);
  return a !== undefined && b !== undefined && a > b
    ? { keyword: lo, reason: `is greater than '${hi}' (${a} > ${b}): no ${what} satisfies both` }
    : undefined;
}

/**
 * The bounds leave no number (no integer when `whole`). Exact arithmetic on the bounds as
 * given: a range the grammar's 10^-6 grid cannot write but real numbers fill is not empty
 * (check.ts handles it).
 */
function emptyRange(s: Schema, whole: boolean): EmptyRule | undefined {
  const min = num(s.minimum);
  const max = num(s.maximum);
  const xmin = num(s.exclusiveMinimum);
  const xmax = num(s.exclusiveMaximum);
  if (min === undefined && max === undefined && xmin === undefined && xmax === undefined) return undefined;
  const first = ['minimum', 'exclusiveMinimum', 'maximum', 'exclusiveMaximum'].find(
    (k) => num(s[k]) !== undefined,
  )!;
  const bounds = ['minimum', 'exclusiveMinimum', 'maximum', 'exclusiveMaximum']
    .filter((k) => num(s[k]) !== undefined)
    .map((k) => `${k} ${String(s[k])}`);
  if (whole) {
    const format = typeof s.format === 'string' ? INTEGER_FORMAT_RANGES[s.format] : undefined;
    const lo = Math.max(
      Math.ceil(min ?? -Infinity),
      Math.floor(xmin ?? -Infinity) + 1,
      format?.[0] ?? -Infinity,
    );
    const hi = Math.min(
      Math.floor(max ?? Infinity),
      Math.ceil(xmax ?? Infinity) - 1,
      format?.[1] ?? Infinity,
    );
    if (lo > hi)
      return {
        keyword: first,
        reason: `the range is empty: no integer satisfies ${bounds.join(', ')}${format ? ` and format ${String(s.format)}` : ''}`,
      };
    return undefined;
  }
  const lo = Math.max(min ?? -Infinity, xmin ?? -Infinity);
  const loOpen = xmin !== undefined && xmin >= (min ?? -Infinity);
  const hi = Math.min(max ?? Infinity, xmax ?? Infinity);
  const hiOpen = xmax !== undefined && xmax <= (max ?? Infinity);
  if (lo > hi || (lo === hi && (loOpen || hiOpen)))
    return { keyword: first, reason: `the range is empty: no number satisfies ${bounds.join(', ')}` };
  return undefined;
}

/** The node a local reference (`#`, `#/a/b`) points to, and its path in dotted form. */
function localTarget(root: unknown, ref: string): { node: unknown; path: string } | undefined {
  if (ref === '#') return { node: root, path: '' };
  if (!ref.startsWith('#/')) return undefined;
  let node = root;
  let path = '';
  for (const raw of ref.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (Array.isArray(node)) {
      node = node[Number(key)];
      path += `[${key}]`;
    } else if (isSchemaObject(node)) {
      node = node[key];
      path += `.${key}`;
    } else return undefined;
  }
  return node === undefined ? undefined : { node, path };
}
