/**
 * When `oneOf` may be enforced as `anyOf`.
 *
 * xgrammar compiles `oneOf` as `anyOf`: a document matching one branch is accepted whether or
 * not it also matches another. That is exact when no document can match two branches, so a
 * `oneOf` is accepted only when every pair of its branches (after the keywords beside it are
 * merged in, branch-merge.ts) is proved disjoint by one of these rules, each sound on its own:
 * - **types**: the branches' JSON types (from `type`, `const` or `enum`) do not meet
 *   (`integer` counts as `number`, since 1 is both);
 * - **values**: both list their values (`const`/`enum`) and no value is in both;
 * - **discriminator**: objects only, a property required by one branch whose schema in the
 *   other branch is disjoint from its own by the rules above (a `kind: "a"` vs `kind: "b"`);
 * - **closed**: objects only, one branch is closed (`additionalProperties` false, or absent,
 *   which Prism reads as false; no `patternProperties`) and the other requires a property it
 *   does not list.
 * Anything else (overlapping types, shapes that only differ in optional properties) stays
 * refused.
 */
import { canonicalJson } from './branch-merge.js';
import { impliedType } from './implicit.js';
import { isSchemaObject, type Schema } from './node.js';

export function branchesDisjoint(branches: readonly unknown[]): boolean {
  for (let i = 0; i < branches.length; i++)
    for (let j = i + 1; j < branches.length; j++) if (!disjoint(branches[i], branches[j], 0)) return false;
  return true;
}

function disjoint(a: unknown, b: unknown, depth: number): boolean {
  if (a === false || b === false) return true;
  if (!isSchemaObject(a) || !isSchemaObject(b)) return false;
  const ta = types(a);
  const tb = types(b);
  if (ta && tb && ![...ta].some((t) => tb.has(t))) return true;
  const va = values(a);
  const vb = values(b);
  if (va && vb && ![...va].some((v) => vb.has(v))) return true;
  const objectOnly = (t: Set<string> | null) => t !== null && t.size === 1 && t.has('object');
  if (!(objectOnly(ta) || objectOnly(tb)) || depth > 4) return false;
  return oneWay(a, b, depth) || oneWay(b, a, depth);
}

/** Every object valid for `a` fails `b`, by the discriminator or the closed rule. */
function oneWay(a: Schema, b: Schema, depth: number): boolean {
  const required = Array.isArray(a.required) ? a.required.map(String) : [];
  const props = (s: Schema) => (isSchemaObject(s.properties) ? s.properties : {});
  const pa = props(a);
  const pb = props(b);
  for (const name of required)
    if (name in pa && name in pb && disjoint(pa[name], pb[name], depth + 1)) return true;
  // Prism's rule (the spec's): additionalProperties is false unless the schema says otherwise,
  // and the grammar writes no other property.
  const closed =
    (b.additionalProperties === false || b.additionalProperties === undefined) &&
    b.patternProperties === undefined;
  return closed && required.some((name) => !(name in pb));
}

/** The JSON types a schema's values can take (integer counted as number), or null if any. */
function types(s: Schema): Set<string> | null {
  const jsonType = (v: unknown) =>
    v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
  let list: unknown[] | null = null;
  if (typeof s.type === 'string') list = [s.type];
  else if (Array.isArray(s.type)) list = s.type;
  else if ('const' in s) list = [jsonType(s.const)];
  else if (Array.isArray(s.enum)) list = s.enum.map(jsonType);
  else {
    // The type the grammar gives it (implicit.ts): documents of other types are never
    // written, so only this type's documents need to be told apart.
    const implied = impliedType(s);
    if (implied && implied !== 'mixed') list = [implied];
  }
  if (!list) return null;
  return new Set(list.map((t) => (t === 'integer' ? 'number' : String(t))));
}

/** The values a schema allows when it lists them (`const` or `enum`), as canonical JSON. */
function values(s: Schema): Set<string> | null {
  if ('const' in s) return new Set([canonicalJson(s.const)]);
  if (Array.isArray(s.enum)) return new Set(s.enum.map(canonicalJson));
  return null;
}
