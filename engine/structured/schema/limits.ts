/**
 * Bounds on a client's JSON Schema, checked before anything walks it: the checks and
 * rewrites of this folder recurse over the schema's nesting, ajv's meta-schema check does
 * too, and the grammar library's compiler recurses in C++ on its own thread (a stack overflow
 * there would end the process). So a schema nested deeper than `MAX_SCHEMA_DEPTH` or larger
 * than `MAX_SCHEMA_NODES` is refused with a 4xx naming where the limit was crossed, and the
 * work a check may do on it (merges copy the subschemas they inline) is bounded by
 * `visitBudget`: twice the schema's own size plus `BASE_VISITS`.
 *
 * The limits sit far above real schemas: of the 5,158 shared JSONSchemaBench schemas the
 * deepest nests 21 levels of objects and arrays, the largest (a Kubernetes object) holds 5,720,
 * and the most any check visits is 4,159 subschemas.
 */
import { refuse } from './refusal.js';

/** JSON nesting levels (objects and arrays) a schema may have. */
export const MAX_SCHEMA_DEPTH = 128;
/** Objects and arrays a schema may hold in all. */
export const MAX_SCHEMA_NODES = 100_000;
/** How much wider the limits are for a schema derived from the client's by merges. */
export const DERIVED_SCALE = 8;
/** Subschemas one check may visit beyond twice the schema's size (merged copies included). */
const BASE_VISITS = 20_000;

/**
 * Throws INVALID_ARGUMENT (field = `field` plus the path) when `schema` nests deeper than
 * MAX_SCHEMA_DEPTH or holds more than MAX_SCHEMA_NODES objects and arrays. Iterative, so the
 * check itself cannot overflow the stack whatever the input. Returns the budget of visits
 * for the checks that walk it. `scale` widens the limits for a schema Prism derived from the
 * client's (merges copy what they inline), whose own making was bounded by a budget.
 */
export function checkSchemaSize(schema: unknown, field: string, scale = 1): VisitBudget {
  const maxDepth = MAX_SCHEMA_DEPTH * scale;
  const maxNodes = MAX_SCHEMA_NODES * scale;
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: schema, depth: 1, path: field }];
  let nodes = 0;
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxDepth)
      throw refuse(
        path,
        `is nested too deeply: a schema may nest at most ${maxDepth} levels of objects and arrays`,
      );
    if (++nodes > maxNodes)
      throw refuse(field, `is too large: a schema may hold at most ${maxNodes} objects and arrays`);
    if (Array.isArray(v)) v.forEach((x, i) => stack.push({ v: x, depth: depth + 1, path: `${path}[${i}]` }));
    else
      for (const [k, x] of Object.entries(v as Record<string, unknown>))
        stack.push({ v: x, depth: depth + 1, path: `${path}.${k}` });
  }
  return new VisitBudget(field, BASE_VISITS + 2 * nodes);
}

/** Counts the subschemas a check visits; throws once `limit` is passed. */
export class VisitBudget {
  private left: number;
  constructor(
    private readonly field: string,
    private readonly limit: number,
  ) {
    this.left = limit;
  }
  visit(path: string): void {
    if (--this.left < 0)
      throw refuse(
        this.field,
        `is too complex: checking it visits more than ${this.limit} subschemas (merging allOf/anyOf/oneOf copies the definitions they reference; stopped at ${path})`,
      );
  }
}
