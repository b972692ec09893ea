/**
 * Keywords beside `anyOf`/`oneOf`, pushed into every branch; `allOf` folded into one schema.
 *
 * xgrammar 0.2.8 compiles a schema that has `anyOf` or `oneOf` from its branches alone and
 * drops every keyword beside them (xgrammar-workarounds.ts: siblings-beside-anyof; and an allOf
 * of several schemas keeps only its first, allof-first-member): `{"required": ["x"], "anyOf": [...]}` accepts documents
 * without `x`, `{"maxLength": 2, "anyOf": [{"type": "string"}]}` accepts any string. JSON
 * Schema reads such a node as a conjunction, `P ∧ (B1 ∨ B2)`, which is `(P ∧ B1) ∨ (P ∧ B2)`:
 * so the parent's keywords are merged into each branch before the grammar sees the schema.
 *
 * The merge of `P` and a branch `B` is exact for these cases, and refused for the rest (the
 * reason names the keyword):
 * - a keyword in only one of them is kept;
 * - `required`: the union; `properties`: the union, a name in both must have equal schemas;
 *   `type`: the intersection (`integer` within `number`) — an empty one drops the branch,
 *   which no document can match;
 * - any other keyword in both must be equal;
 * - `additionalProperties`/`patternProperties` judge only their own schema's `properties`,
 *   so either side having them refuses a merge that would add properties to it;
 * - a branch `{"$ref": "#/..."}` is replaced by its target first; `true`/`{}` is `P` itself;
 *   `false` is dropped.
 *
 * Inlining a reference copies its definition, so a definition that reaches itself through
 * such a merge (`items: {"allOf": [{"$ref": "#/definitions/menuItem"}]}` inside `menuItem`)
 * would expand without end. Each merge reports the references it inlined (`inlined`); the
 * walks over merged schemas (check.ts, `distributeSiblings`) carry the references
 * being expanded and refuse one that comes round again (`MergeCycle`). An `allOf` of one
 * reference with nothing beside it needs no merge: it stays the reference, and a recursive
 * definition stays a recursive grammar rule.
 */
import { typesLeftByNot } from './implicit.js';
import { refuse } from './refusal.js';
import type { VisitBudget } from './limits.js';
import { isSchemaObject, subschemas, type Schema } from './node.js';

export type BranchMerge =
  | {
      readonly ok: true;
      readonly branches: readonly unknown[];
      readonly moved: readonly string[];
      /** For each branch kept, the references inlined into it (empty when none). */
      readonly inlined: readonly (readonly Inlined[])[];
    }
  | { readonly ok: false; readonly keyword: string; readonly reason: string; readonly empty?: true };

/**
 * The relaxed preparation (prepare.ts) merges what the exact one refuses: a keyword on both
 * sides with different values keeps one of them (the tighter, where both are numeric bounds
 * of the same kind, which is exact), properties are added beside an additionalProperties that
 * would judge them, a reference with keywords beside it is followed without them, a merge
 * that would expand a cycle keeps the reference. Each such step makes the merged schema
 * accept more than the client's, never less, and is recorded here: the finished document is
 * then checked against the client's schema.
 */
export interface Loosened {
  /** Where, as a dotted path inside the schema ('' for its root). */
  readonly path: string;
  readonly reason: string;
}
/** Where a relaxed merge records what it loosened; null in the exact preparation. */
export type Relax = Loosened[] | null;

/** Bounds of which both sides' values hold when the tighter one does. */
const LOWER_BOUNDS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties']);
const UPPER_BOUNDS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties']);

/** A reference a merge followed, and the definition it copied (compared by identity). */
export interface Inlined {
  readonly ref: string;
  readonly target: unknown;
}

/** How many merges inside merged branches are looked into for emptiness (see mergeBranches). */
const INNER_DEPTH = 4;

/** Keywords that annotate only: two different values merge to the branch's. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
]);

/** Keywords that stay on the parent: the alternatives, definitions (refs point to their path),
 * annotations. */
const STAYS = new Set([...ANNOTATIONS, 'anyOf', 'oneOf', '$defs', 'definitions', '$schema', '$id', 'id']);

/** The keywords of `s` that constrain alongside its `anyOf`/`oneOf` (those that move). */
function siblings(s: Schema): string[] {
  return Object.keys(s).filter((k) => !STAYS.has(k) && !k.startsWith('x-'));
}

const hasOneAlternative = (s: Schema) => Array.isArray(s.anyOf) !== Array.isArray(s.oneOf);

/** `s`'s `anyOf` or `oneOf` branches merged with the keywords beside them. */
export function mergeBranches(s: Schema, root: unknown, depth = 0, relax: Relax = null): BranchMerge {
  const alt = Array.isArray(s.oneOf) ? 'oneOf' : 'anyOf';
  const branches = s[alt] as unknown[];
  const moved = siblings(s);
  if (moved.length === 0) return { ok: true, branches, moved, inlined: branches.map(() => []) };
  const parent = Object.fromEntries(moved.map((k) => [k, s[k]]));
  const out: unknown[] = [];
  const inlined: Inlined[][] = [];
  for (let i = 0; i < branches.length; i++) {
    const r = followRefs(branches[i], root, relax);
    if (r === undefined)
      return {
        ok: false,
        keyword: `${alt}[${i}].$ref`,
        reason: 'cannot be merged with the keywords beside it',
      };
    const merged = mergeOne(parent, r.target, relax);
    if (merged === null) continue;
    // A branch whose own alternatives all fail beside what it now holds matches nothing. (Only
    // a few levels down: through references the question could recur without end, and a
    // branch kept here that matches nothing only costs the grammar a dead alternative.)
    if (
      depth < INNER_DEPTH &&
      'schema' in merged &&
      isSchemaObject(merged.schema) &&
      hasOneAlternative(merged.schema)
    ) {
      const inner = mergeBranches(merged.schema, root, depth + 1, relax && []);
      if (!inner.ok && inner.empty) continue;
    }
    if ('keyword' in merged)
      return {
        ok: false,
        keyword: merged.keyword ? `${alt}[${i}].${merged.keyword}` : `${alt}[${i}]`,
        reason: `conflicts with '${merged.keyword}' beside ${alt} (${merged.reason}); the grammar library enforces only the branches, so the two must merge`,
      };
    out.push(merged.schema);
    inlined.push(r.refs);
  }
  if (out.length === 0)
    return {
      ok: false,
      keyword: alt,
      reason: `no branch is compatible with the keywords beside ${alt}`,
      empty: true,
    };
  return { ok: true, branches: out, moved, inlined };
}

export type AllOfMerge =
  | {
      readonly ok: true;
      readonly schema: Record<string, unknown>;
      /** The references inlined into `schema`. */
      readonly inlined: readonly Inlined[];
    }
  | { readonly ok: false; readonly keyword: string; readonly reason: string };

/**
 * `s` with its `allOf` folded in: `{P, allOf: [A, B]}` is `P ∧ A ∧ B`, merged by the same rules
 * as a branch (the grammar library would need them as one schema anyway; xgrammar 0.2.8
 * refuses an `allOf` of more than one schema). Members' own `allOf`s fold in too. An `allOf`
 * of one reference with only annotations beside it is that reference (nothing is inlined).
 */
export function mergeAllOf(s: Schema, root: unknown, relax: Relax = null): AllOfMerge {
  const lone = loneReference(s);
  if (lone) return { ok: true, schema: lone, inlined: [] };
  let acc: Schema = s;
  const inlined: Inlined[] = [];
  for (let round = 0; Array.isArray(acc.allOf) && round < 8; round++) {
    const members = acc.allOf as unknown[];
    const { allOf: _members, ...rest } = acc;
    let next: Schema = rest;
    for (let i = 0; i < members.length; i++) {
      const r = followRefs(members[i], root, relax);
      if (r === undefined)
        return {
          ok: false,
          keyword: `allOf[${i}].$ref`,
          reason: 'cannot be merged with the schemas beside it',
        };
      inlined.push(...r.refs);
      const merged = mergeOne(next, r.target, relax);
      if (merged === null)
        return { ok: false, keyword: 'allOf', reason: 'no document satisfies all of its schemas' };
      if ('keyword' in merged)
        return {
          ok: false,
          keyword: merged.keyword ? `allOf[${i}].${merged.keyword}` : `allOf[${i}]`,
          reason: `conflicts with the schemas beside it (${merged.reason}); allOf is enforced by merging its schemas into one`,
        };
      next = merged.schema as Schema;
    }
    acc = next;
  }
  if (Array.isArray(acc.allOf)) return { ok: false, keyword: 'allOf', reason: 'is nested too deeply' };
  return { ok: true, schema: acc, inlined };
}

/**
 * `{"allOf": [{"$ref": R}]}` (annotations, definitions beside it allowed) as `{"$ref": R}` plus
 * what was beside it; null for any other `allOf`.
 */
function loneReference(s: Schema): Schema | null {
  const members = s.allOf as unknown[];
  if (members.length !== 1 || siblings(s).some((k) => k !== 'allOf')) return null;
  const m = members[0];
  if (!isSchemaObject(m) || typeof m.$ref !== 'string' || siblings(m).length > 1) return null;
  const { allOf: _members, ...rest } = s;
  return { ...rest, $ref: m.$ref };
}

/**
 * A merge inlined a reference that is already being expanded on the way here: the definition
 * reaches itself through merges, and expanding it again would never end.
 */
export function mergeCycle(inlined: readonly Inlined[], expanding: readonly Inlined[]): string | undefined {
  return inlined.find((r) => expanding.some((e) => e.target === r.target))?.ref;
}

/** The 400 for a merge that would expand a cycle, at `path`. */
export function mergeCycleError(path: string, ref: string) {
  return refuse(
    path,
    `refers back to ${JSON.stringify(ref)} through a merge (keywords beside anyOf/oneOf, or allOf) that would copy that definition into itself without end; make the recursion a plain $ref (e.g. items: {"$ref": ${JSON.stringify(ref)}}) without keywords merged into it`,
  );
}

/**
 * Rewrites in place every node whose `anyOf`/`oneOf` has constraining keywords beside it
 * (check.ts has refused the schemas whose merge fails, or would expand a cycle: the same
 * cycle check here keeps this walk finite whatever it is given). True when anything changed.
 */
export function distributeSiblings(
  node: unknown,
  root: unknown = node,
  expanding: readonly Inlined[] = [],
  relax: Relax = null,
  path = '',
  budget?: VisitBudget,
): boolean {
  if (!isSchemaObject(node)) return false;
  budget?.visit(`schema${path}`);
  let changed = false;
  let inside = expanding;
  if (Array.isArray(node.allOf)) {
    const m = mergeAllOf(node, root, relax);
    if (m.ok) {
      const cycle = mergeCycle(m.inlined, inside);
      let merged = m.schema;
      if (cycle !== undefined) {
        if (!relax) throw mergeCycleError(`schema${path}.allOf`, cycle);
        // Relaxed: the recursion stays a reference, what was beside it is left to the check.
        const { allOf: _members, ...rest } = node;
        merged = { ...annotationsOf(rest), $ref: cycle };
        relax.push({ path: `${path}.allOf`, reason: `merging ${JSON.stringify(cycle)} into itself` });
      } else inside = [...inside, ...m.inlined];
      for (const k of Object.keys(node)) delete node[k];
      Object.assign(node, merged);
      changed = true;
    }
  }
  if (Array.isArray(node.anyOf) !== Array.isArray(node.oneOf)) {
    const alt = Array.isArray(node.oneOf) ? 'oneOf' : 'anyOf';
    const original = node[alt] as unknown[];
    const m = mergeBranches(node, root, 0, relax);
    if (m.ok && m.moved.length > 0) {
      for (const k of m.moved) delete node[k];
      const branches = [...m.branches];
      node[alt] = branches;
      changed = true;
      branches.forEach((b, i) => {
        const cycle = mergeCycle(m.inlined[i]!, inside);
        if (cycle !== undefined) {
          if (!relax) throw mergeCycleError(`schema${path}.${alt}[${i}]`, cycle);
          // Relaxed: the branch stays the reference; the keywords beside it are checked after.
          branches[i] = { $ref: cycle };
          relax.push({
            path: `${path}.${alt}[${i}]`,
            reason: `keywords beside ${alt} merged into a recursion`,
          });
          return;
        }
        changed =
          distributeSiblings(b, root, [...inside, ...m.inlined[i]!], relax, `${path}.${alt}[${i}]`) ||
          changed;
      });
      for (const sub of subschemas(node))
        if (!branches.includes(sub) && !original.includes(sub))
          changed = distributeSiblings(sub, root, inside, relax, path, budget) || changed;
      return changed;
    }
  }
  for (const sub of subschemas(node))
    changed = distributeSiblings(sub, root, inside, relax, path, budget) || changed;
  return changed;
}

/** The annotation keywords of `s` (they constrain nothing, so a reference may keep them). */
function annotationsOf(s: Schema): Schema {
  return Object.fromEntries(
    Object.entries(s).filter(([k]) => STAYS.has(k) && k !== 'anyOf' && k !== 'oneOf'),
  );
}

/** A branch with a local `$ref` followed (up to 8 hops); undefined when it cannot be. */
export function resolveRef(b: unknown, root: unknown): unknown {
  return followRefs(b, root)?.target;
}

/** `b` with its local `$ref`s followed (up to 8 hops), and the references followed. */
function followRefs(
  b: unknown,
  root: unknown,
  relax: Relax = null,
): { target: unknown; refs: Inlined[] } | undefined {
  const refs: Inlined[] = [];
  for (let hop = 0; hop < 8; hop++) {
    if (!isSchemaObject(b) || typeof b.$ref !== 'string') return { target: b, refs };
    // A $ref with other constraining keywords beside it: older drafts ignore them, newer
    // ones conjoin them; rather than guess, refuse (relaxed: follow it, check them after).
    if (siblings(b).length > 1) {
      if (!relax) return undefined;
      relax.push({ path: '', reason: `keywords beside the reference ${JSON.stringify(b.$ref)}` });
    }
    const target = pointer(root, b.$ref);
    if (target === undefined) {
      // Relaxed: a reference the merge cannot follow counts as any value.
      if (!relax) return undefined;
      relax.push({ path: '', reason: `a reference that cannot be followed: ${JSON.stringify(b.$ref)}` });
      return { target: true, refs };
    }
    refs.push({ ref: b.$ref, target });
    b = target;
  }
  return undefined;
}

/**
 * The reference of `s` when following it (and the references its target is made of) comes back
 * to a schema already passed without meeting anything but references: `{"$ref": "#"}` at the
 * root, two definitions that are each other's `$ref`, an `allOf`/`anyOf` of one reference to
 * itself. No document matches such a schema (the grammar compiles it to a rule that never
 * ends); undefined for any other schema.
 */
export function referenceLoop(s: Schema, root: unknown): string | undefined {
  const seen = new Set<unknown>([s]);
  let at: unknown = s;
  for (let hop = 0; hop < 64; hop++) {
    const ref = onlyReference(at);
    if (ref === undefined) return undefined;
    at = pointer(root, ref);
    if (seen.has(at)) return ref;
    seen.add(at);
  }
  return undefined;
}

/** The `$ref` a schema is nothing but (itself, or as the one member of an allOf/anyOf/oneOf). */
function onlyReference(s: unknown): string | undefined {
  if (!isSchemaObject(s)) return undefined;
  const own = siblings(s);
  if (own.length === 1 && own[0] === '$ref' && typeof s.$ref === 'string') return s.$ref;
  const alt = ['allOf', 'anyOf', 'oneOf'].filter((k) => k in s);
  if (alt.length !== 1 || own.length !== (alt[0] === 'allOf' ? 1 : 0)) return undefined;
  const members = s[alt[0]!];
  return Array.isArray(members) && members.length === 1 ? onlyReference(members[0]) : undefined;
}

/** The JSON pointer `#/a/b` within `root`. */
function pointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchemaObject(at) && !Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

type MergeResult =
  { readonly schema: unknown } | { readonly keyword: string; readonly reason: string } | null;

/** `P ∧ B` as one schema; null when no document can match it (the branch is dropped). */
function mergeOne(parent: Schema, b: unknown, relax: Relax = null): MergeResult {
  if (b === false) return null;
  if (b === true) return { schema: structuredClone(parent) };
  if (!isSchemaObject(b)) return { keyword: '', reason: 'a branch must be a schema' };
  const out: Schema = structuredClone(b);
  const closes = (s: Schema) => s.additionalProperties !== undefined || s.patternProperties !== undefined;
  const names = (s: Schema) => Object.keys(isSchemaObject(s.properties) ? s.properties : {});
  const loosen = (keyword: string, reason: string): MergeResult | undefined => {
    if (!relax) return { keyword, reason };
    relax.push({ path: keyword, reason });
    return undefined;
  };
  if (closes(parent) && names(b).some((n) => !names(parent).includes(n))) {
    const r = loosen('properties', 'additionalProperties beside it judges only its own properties');
    if (r) return r;
  }
  if (closes(b) && names(parent).some((n) => !names(b).includes(n))) {
    const r = loosen('additionalProperties', "it would judge the parent's properties too");
    if (r) return r;
  }
  for (const [k, pv] of Object.entries(parent)) {
    if (!(k in out)) {
      out[k] = structuredClone(pv);
      continue;
    }
    const bv = out[k];
    if (k === 'required' && Array.isArray(pv) && Array.isArray(bv)) {
      out[k] = [...new Set([...pv, ...bv])];
    } else if (k === 'properties' && isSchemaObject(pv) && isSchemaObject(bv)) {
      // The parent's properties first, in its order, then the branch's own: the grammar
      // writes properties in the order listed.
      const merged: Schema = {};
      out[k] = merged;
      for (const [name, sub] of Object.entries(pv)) {
        if (!(name in bv)) {
          merged[name] = structuredClone(sub);
          continue;
        }
        // A property in both: its schema is the conjunction of the two, merged the same way.
        let inner: MergeResult;
        if (sub === true || sameJson(sub, bv[name])) inner = { schema: bv[name] };
        else if (isSchemaObject(sub)) inner = mergeOne(sub, bv[name], relax);
        else if (relax) {
          relax.push({ path: `properties.${name}`, reason: 'different schemas' });
          inner = { schema: bv[name] };
        } else inner = { keyword: '', reason: 'different schemas' };
        if (inner === null) return null; // no value fits both: the property rules the branch out
        if ('keyword' in inner)
          return {
            keyword: ['properties', name, inner.keyword].filter(Boolean).join('.'),
            reason: inner.reason,
          };
        merged[name] = inner.schema;
      }
      for (const [name, sub] of Object.entries(bv)) if (!(name in merged)) merged[name] = sub;
    } else if (k === 'enum' && Array.isArray(pv) && Array.isArray(bv)) {
      const keep = new Set(pv.map(canonicalJson));
      const both = bv.filter((v) => keep.has(canonicalJson(v)));
      if (both.length === 0) return null;
      out[k] = both;
    } else if (ANNOTATIONS.has(k)) {
      // Annotations constrain nothing: the branch's own wins.
    } else if (k === 'type') {
      const types = intersectTypes(pv, bv);
      if (types.length === 0) return null;
      out[k] = types.length === 1 ? types[0] : types;
    } else if (
      typeof pv === 'number' &&
      typeof bv === 'number' &&
      (LOWER_BOUNDS.has(k) || UPPER_BOUNDS.has(k))
    ) {
      // Both bounds hold exactly when the tighter one does.
      out[k] = LOWER_BOUNDS.has(k) ? Math.max(pv, bv) : Math.min(pv, bv);
    } else if (!sameJson(pv, bv)) {
      // Relaxed: the branch's own value stays (a weaker schema than both); checked after.
      const r = loosen(k, 'different values');
      if (r) return r;
    }
  }
  // A `not: {type}` (from either side) is the types it leaves; none left: no document.
  const left = typesLeftByNot(out);
  if (left === 'empty') return null;
  if (Array.isArray(left)) {
    out.type = left.length === 1 ? left[0] : left;
    delete out.not;
  }
  // A const beside an enum (one from each side): the const, if the enum has it.
  if ('const' in out && Array.isArray(out.enum)) {
    if (!out.enum.some((v) => sameJson(v, out.const))) return null;
    delete out.enum;
  }
  return { schema: out };
}

function intersectTypes(a: unknown, b: unknown): string[] {
  const list = (t: unknown) => (Array.isArray(t) ? t.map(String) : [String(t)]);
  const bs = list(b);
  const out = new Set<string>();
  for (const t of list(a)) {
    if (bs.includes(t)) out.add(t);
    else if (t === 'number' && bs.includes('integer')) out.add('integer');
    else if (t === 'integer' && bs.includes('number')) out.add('integer');
  }
  return [...out];
}

/** Equal as JSON values (object key order ignored). */
function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isSchemaObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
