/**
 * JSONSchemaBench coverage (shared/data/jsonschemabench, four categories): for each schema,
 * does the engine accept and compile it, and does every completed output parse and validate
 * against it with ajv (+ ajv-formats)? Requests run concurrently through one engine. A
 * document cut by max_tokens counts as `length`, not as invalid (it is a prefix of a valid
 * one by construction, and the API reports it with finish_reason `length`).
 *
 * Used by test/structured-jsonschemabench.test.ts (a fixed sample per category) and, as a
 * script, over the full sets:
 *   PRISM_SHARED_DIR=/path/to/shared node --import tsx bench/jsonschemabench.ts [perCategory] [maxTokens]
 * and, without a model, the preparation and compile coverage of every schema (the shared
 * categories, the other categories of a copy of the benchmark's data/ folder, a generated set):
 *   node --import tsx bench/jsonschemabench.ts --coverage [/path/to/jsonschemabench/data]
 * (PRISM_COVERAGE_SAMPLE=300: every k-th file, at most 300 a set; PRISM_COVERAGE_SETS=a,b: only
 * the sets whose names start so). Nothing is downloaded: the other categories are read from
 * the folder given, a local copy of the benchmark's data/ (public repository
 * guidance-ai/jsonschemabench), and CI runs only the shared categories.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { EngineError } from '../engine/errors.js';
import type { Engine, FinishEvent, GenerateEvent } from '../engine/types.js';

export const CATEGORIES = ['Glaiveai2K', 'Github_trivial', 'Github_easy', 'Kubernetes'] as const;

/** shared/ beside the repository (as CI lays it out), or PRISM_SHARED_DIR. */
export function jsonSchemaBenchDir(): string {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  return join(process.env.PRISM_SHARED_DIR ?? join(root, '..', 'shared'), 'data', 'jsonschemabench');
}

export interface CategoryResult {
  readonly category: string;
  schemas: number;
  /** Refused before compiling (invalid JSON Schema, or a keyword the grammar cannot enforce). */
  refused: number;
  /** Passed the checks but the grammar library failed to compile it. */
  compileFailed: number;
  compiled: number;
  /** Outputs that ended by the grammar (EOS where the document is complete). */
  completed: number;
  valid: number;
  /** Cut by max_tokens. */
  length: number;
  /** The engine failed the request after compiling for another reason (should be 0). */
  errors: number;
  /** Requests that threw an error other than INVALID_ARGUMENT (a 5xx; must be 0). */
  serverErrors: number;
  /**
   * The output failed the check of what the grammar could not enforce on every attempt: the
   * request failed with a clear error (never an invalid document presented as valid).
   */
  checkFailed: number;
  /** Completed outputs ajv could not check because ajv itself rejects the schema. */
  unvalidatable: number;
  readonly refusals: Map<string, number>;
  readonly invalidSamples: string[];
  readonly compileMs: number[];
}

/** Every k-th file of the sorted list, so the sample is fixed and spread over the set. */
export function sampleFiles(dir: string, n: number | undefined): string[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  if (n === undefined || n >= files.length) return files;
  const step = files.length / n;
  return Array.from({ length: n }, (_, i) => files[Math.floor(i * step)]);
}

function refusalReason(message: string): string {
  if (/enforced only beside "type"/.test(message)) return 'numeric bound without type';
  if (/the range is empty|decimal places|64-bit integers/.test(message)) return 'numeric bound';
  if (/cannot be combined with format/.test(message)) return 'format with length';
  if (/lookahead/.test(message)) return 'pattern with lookaround';
  const kw = /keyword '([^']+)'/.exec(message);
  if (kw) return `keyword ${kw[1]}`;
  if (/format/.test(message)) return 'format';
  if (/not valid JSON Schema/.test(message)) return 'invalid JSON Schema';
  if (/cannot be combined with 'pattern'/.test(message)) return 'pattern with length/format';
  return message.replace(/^[^:]*: /, '').slice(0, 60);
}

async function runOne(
  engine: Engine,
  text: string,
  maxTokens: number,
  r: CategoryResult,
  validator: Ajv2020,
): Promise<void> {
  const events: GenerateEvent[] = [];
  const t0 = performance.now();
  try {
    for await (const ev of engine.generate({
      prompt: { kind: 'chat', messages: [{ role: 'user', content: 'Write one JSON document.' }] },
      params: { maxNewTokens: maxTokens, temperature: 0 },
      constraint: { kind: 'json_schema', schema: text },
    }))
      events.push(ev);
  } catch (e) {
    const message = (e as Error).message;
    // A thrown error that is not the client's (INVALID_ARGUMENT is a 4xx; anything else,
    // INTERNAL included, would be a 5xx): counted apart, never as a refusal.
    if (!(e instanceof EngineError) || e.code !== 'INVALID_ARGUMENT') {
      r.serverErrors++;
      r.invalidSamples.push(`thrown: ${message.slice(0, 200)}`);
      return;
    }
    if (/does not compile|did not compile/.test(message)) {
      r.compileFailed++;
      const why = /did not compile within/.test(message) ? 'compile: time limit' : 'compile: error';
      r.refusals.set(why, (r.refusals.get(why) ?? 0) + 1);
    } else {
      r.refused++;
      const why = refusalReason(message);
      r.refusals.set(why, (r.refusals.get(why) ?? 0) + 1);
    }
    return;
  }
  r.compiled++;
  r.compileMs.push(performance.now() - t0);
  const f = events.find((x): x is FinishEvent => x.type === 'finish');
  if (f?.reason === 'error' && /does not satisfy the schema after/.test(f.error ?? '')) {
    r.checkFailed++;
    return;
  }
  if (!f || f.reason === 'error') {
    r.errors++;
    if (f?.error) r.invalidSamples.push(`error: ${f.error.slice(0, 200)}`);
    return;
  }
  if (f.reason === 'length') {
    r.length++;
    return;
  }
  r.completed++;
  let validate: (((doc: unknown) => boolean) & { errors?: ErrorObject[] | null }) | undefined;
  const { $schema: _s, ...schema } = JSON.parse(text) as Record<string, unknown>;
  // A draft-4 schema (boolean exclusive bounds, `id`, ...) that ajv's 2020-12 dialect refuses:
  // checked in its 2020-12 reading, the one the engine enforces (schema/drafts.ts); a pattern
  // or a `$id` ajv cannot compile as written: as the engine's check reads it (post-check.ts).
  const { normalizeDraft } = await import('../engine/structured/schema/drafts.js');
  const { compileValidator } = await import('../engine/structured/schema/post-check.js');
  const { $schema: _d, ...read } = normalizeDraft(JSON.parse(text)) as Record<string, unknown>;
  for (const compile of [
    () => validator.compile(schema),
    () => validator.compile(read),
    () => compileValidator(read),
  ]) {
    try {
      validate = compile();
      break;
    } catch {
      continue;
    } finally {
      validator.removeSchema();
    }
  }
  if (!validate) {
    r.unvalidatable++;
    r.invalidSamples.push(`unvalidatable: ${text.slice(0, 120)}`);
    return;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(f.text);
  } catch {
    r.invalidSamples.push(f.text.slice(0, 200));
    return;
  }
  if (validate(doc)) r.valid++;
  else r.invalidSamples.push(`${f.text.slice(0, 160)} — ${validator.errorsText(validate.errors)}`);
}

export async function runJsonSchemaBench(
  engine: Engine,
  options: {
    perCategory?: number;
    maxTokens: number;
    concurrency: number;
    /** Other category folders (name → folder) to run after the shared ones. */
    extra?: readonly { readonly category: string; readonly dir: string }[];
    /** Only these categories (default: every shared one, then the extra). */
    only?: readonly string[];
    /** Called with each category's result as it finishes. */
    progress?: (r: CategoryResult) => void;
  },
): Promise<CategoryResult[]> {
  const dir = jsonSchemaBenchDir();
  const results: CategoryResult[] = [];
  const sets = [
    ...CATEGORIES.map((c) => ({ category: c, dir: join(dir, c) })),
    ...(options.extra ?? []),
  ].filter((x) => !options.only || options.only.includes(x.category));
  for (const { category, dir: folder } of sets) {
    const r: CategoryResult = {
      category,
      schemas: 0,
      refused: 0,
      compileFailed: 0,
      compiled: 0,
      completed: 0,
      valid: 0,
      length: 0,
      errors: 0,
      serverErrors: 0,
      checkFailed: 0,
      unvalidatable: 0,
      refusals: new Map(),
      invalidSamples: [],
      compileMs: [],
    };
    const validator = new Ajv2020({ strict: false, allErrors: false });
    addFormats.default(validator);
    const files = sampleFiles(folder, options.perCategory);
    r.schemas = files.length;
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const file = files[next++];
        await runOne(engine, readFileSync(join(folder, file), 'utf8'), options.maxTokens, r, validator);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    results.push(r);
    options.progress?.(r);
  }
  return results;
}

const pct = (a: number, b: number) => (b === 0 ? '—' : `${((100 * a) / b).toFixed(1)}%`);

export function resultTable(results: readonly CategoryResult[]): string {
  const rows = [
    '| category | schemas | compiled | refused | compile failed | completed | valid / completed | cut by max_tokens | failed the check 3 times (424) | other errors | 5xx |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    rows.push(
      `| ${r.category} | ${r.schemas} | ${r.compiled} (${pct(r.compiled, r.schemas)}) | ${r.refused} | ${r.compileFailed} | ${r.completed} | ${r.valid}/${r.completed - r.unvalidatable} (${pct(r.valid, r.completed - r.unvalidatable)}) | ${r.length} | ${r.checkFailed} | ${r.errors} | ${r.serverErrors} |`,
    );
  }
  return rows.join('\n');
}

export function refusalSummary(results: readonly CategoryResult[]): string {
  return results
    .map(
      (r) =>
        `${r.category}: ${[...r.refusals.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
    )
    .join('\n');
}

// ------------------------------------------------------------------ coverage without a model

/** How each schema of a set fares in preparation and compilation (no model, no generation). */
export interface CoverageRow {
  readonly set: string;
  schemas: number;
  /** The grammar alone enforces it exactly (also what OpenAI `strict: true` accepts). */
  exact: number;
  /** Accepted: the grammar enforces part, the finished document is checked for the rest. */
  checked: number;
  /** Refused with a 4xx naming the field. */
  refused: number;
  /** Refusals and compile failures, by reason. */
  readonly reasons: Map<string, number>;
  /** Prepared, but the grammar library refused to compile it (a 4xx too). */
  compileFailed: number;
  /** Anything else thrown: would be a 5xx. Must be 0. */
  thrown: number;
  readonly thrownSamples: string[];
  /** Files that are not JSON at all (not counted as schemas). */
  notJson: number;
  readonly prepareMs: number[];
}

/** The refusal reason, without the values in it (for counting). */
function reasonKey(reason: string): string {
  const kw = /keyword '([^']+)'/.exec(reason);
  if (kw) return `keyword ${kw[1]}`;
  return reason
    .replace(/"[^"]*"/g, '…')
    .replace(/\d+/g, 'N')
    .slice(0, 70);
}

/**
 * Prepares (schema/prepare.ts) and compiles (xgrammar, over a printable-ASCII vocabulary:
 * whether a grammar compiles does not depend on the model's) every schema of `schemas`.
 */
export async function coverage(set: string, schemas: Iterable<unknown>, notJson = 0): Promise<CoverageRow> {
  const { prepareSchema } = await import('../engine/structured/schema/prepare.js');
  const { asciiGrammarCompiler } = await import('../engine/structured/bare-grammar.js');
  const { compileDocumentCheck } = await import('../engine/structured/schema/post-check.js');
  const { loadGrammarAddon } = await import('../native/native.js');
  const xg = loadGrammarAddon();
  const row: CoverageRow = {
    set,
    schemas: 0,
    exact: 0,
    checked: 0,
    refused: 0,
    reasons: new Map(),
    compileFailed: 0,
    thrown: 0,
    thrownSamples: [],
    notJson,
    prepareMs: [],
  };
  for (const schema of schemas) {
    row.schemas++;
    let prepared;
    const t0 = performance.now();
    try {
      prepared = prepareSchema(schema, 'schema');
    } catch (e) {
      row.thrown++;
      row.thrownSamples.push(`${(e as Error).message}: ${JSON.stringify(schema).slice(0, 200)}`);
      continue;
    } finally {
      row.prepareMs.push(performance.now() - t0);
    }
    if ('refused' in prepared) {
      row.refused++;
      const k = reasonKey(prepared.refused);
      row.reasons.set(k, (row.reasons.get(k) ?? 0) + 1);
      continue;
    }
    try {
      xg.dispose(xg.compileJsonSchema(asciiGrammarCompiler(), prepared.schema, true));
      // The document check is compiled with the grammar (grammar-worker.ts): a schema whose
      // check does not compile is a 400 too.
      if (prepared.check) compileDocumentCheck(prepared.check.schema);
    } catch (e) {
      row.compileFailed++;
      const k = `compile: ${reasonKey((e as Error).message)}`;
      row.reasons.set(k, (row.reasons.get(k) ?? 0) + 1);
      continue;
    }
    if (prepared.check) row.checked++;
    else row.exact++;
  }
  return row;
}

/**
 * The schemas of a folder of JSON files (sorted; `n`: a fixed sample of every k-th), and how
 * many files were not JSON.
 */
export function schemaFiles(dir: string, n?: number): { schemas: unknown[]; notJson: number } {
  const schemas: unknown[] = [];
  let notJson = 0;
  for (const f of sampleFiles(dir, n)) {
    try {
      schemas.push(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    } catch {
      notJson++;
    }
  }
  return { schemas, notJson };
}

export function coverageTable(rows: readonly CoverageRow[]): string {
  const out = [
    '| set | schemas | grammar alone | accepted with the check | accepted in all | refused (4xx) | compile failed (4xx) | 5xx |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const ok = r.exact + r.checked;
    out.push(
      `| ${r.set} | ${r.schemas} | ${r.exact} (${pct(r.exact, r.schemas)}) | ${r.checked} (${pct(r.checked, r.schemas)}) | ${ok} (${pct(ok, r.schemas)}) | ${r.refused} | ${r.compileFailed} | ${r.thrown} |`,
    );
  }
  return out.join('\n');
}

export function coverageReasons(rows: readonly CoverageRow[]): string {
  return rows
    .filter((r) => r.reasons.size > 0)
    .map(
      (r) =>
        `${r.set}: ${[...r.reasons.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 6)
          .map(([k, v]) => `${k} (${v})`)
          .join('; ')}`,
    )
    .join('\n');
}

if (
  process.argv[1] &&
  resolve(process.argv[1]) === fileURLToPath(import.meta.url) &&
  process.argv[2] === '--coverage'
) {
  // Coverage without a model: the shared categories, any other JSONSchemaBench categories in
  // the folder given (e.g. a copy of the benchmark's data/ with those not in this repository),
  // and a generated set (test/fuzz/json-schemas.ts).
  const fc = (await import('fast-check')).default;
  const { jsonSchemas } = await import('../test/fuzz/json-schemas.js');
  const rows: CoverageRow[] = [];
  const shared = jsonSchemaBenchDir();
  const only = process.env.PRISM_COVERAGE_SETS?.split(',');
  // PRISM_COVERAGE_SAMPLE: at most that many schemas per set (every k-th file), as the issue's
  // 300 per category; unset, every file.
  const sample = process.env.PRISM_COVERAGE_SAMPLE ? Number(process.env.PRISM_COVERAGE_SAMPLE) : undefined;
  const wanted = (name: string) => !only || only.some((o) => name.startsWith(o));
  const progress = (r: CoverageRow) =>
    console.error(
      `${r.set}: ${r.exact} + ${r.checked} of ${r.schemas}, refused ${r.refused}, compile failed ${r.compileFailed}, 5xx ${r.thrown}; ${coverageReasons([r])}`,
    );
  for (const c of CATEGORIES.filter(wanted)) {
    const { schemas, notJson } = schemaFiles(join(shared, c), sample);
    rows.push(await coverage(c, schemas, notJson));
    progress(rows.at(-1)!);
  }
  const external = process.argv[3];
  if (external)
    for (const c of readdirSync(external).sort()) {
      if ((CATEGORIES as readonly string[]).includes(c) || !wanted(c)) continue;
      const dir = join(external, c);
      let files: string[];
      try {
        files = readdirSync(dir);
      } catch {
        continue;
      }
      if (files.length === 0) continue;
      const { schemas, notJson } = schemaFiles(dir, sample);
      rows.push(await coverage(`${c} (not in the repository)`, schemas, notJson));
      progress(rows.at(-1)!);
    }
  if (wanted('generated'))
    rows.push(
      await coverage(
        'generated (fast-check, seed 1)',
        fc.sample(jsonSchemas, { numRuns: Math.min(sample ?? 2000, 2000), seed: 1 }),
      ),
    );
  console.log(coverageTable(rows));
  console.log(coverageReasons(rows));
  for (const r of rows) for (const t of r.thrownSamples.slice(0, 3)) console.log(`5xx ${r.set}: ${t}`);
  const all = rows.flatMap((r) => r.prepareMs).sort((a, b) => a - b);
  console.log(
    `prepare ms: median ${all[Math.floor(all.length / 2)]!.toFixed(2)}, p99 ${all[Math.floor(all.length * 0.99)]!.toFixed(1)}, max ${all.at(-1)!.toFixed(0)}; load ${(
      await import('node:os')
    )
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { ensureDefaultModel } = await import('../engine/default-model.js');
  const { loadEngine } = await import('../engine/load-engine.js');
  const perCategory = process.argv[2] ? Number(process.argv[2]) : undefined;
  const maxTokens = process.argv[3] ? Number(process.argv[3]) : 256;
  const engine = await loadEngine(ensureDefaultModel(), {
    maxBatchSize: 16,
    maxSeqLen: 2048,
    kvCacheBytes: 256 << 20,
  });
  const t0 = performance.now();
  // PRISM_JSB_EXTRA: a folder of more categories (e.g. the benchmark's data/), each a folder
  // of schemas; PRISM_JSB_ONLY: a comma-separated list of the categories to run.
  const extraDir = process.env.PRISM_JSB_EXTRA;
  const extra = extraDir
    ? readdirSync(extraDir)
        .filter((c) => !(CATEGORIES as readonly string[]).includes(c))
        .map((c) => ({ category: c, dir: join(extraDir, c) }))
        .filter((x) => {
          try {
            return readdirSync(x.dir).length > 0;
          } catch {
            return false;
          }
        })
    : [];
  const only = process.env.PRISM_JSB_ONLY?.split(',');
  const results = await runJsonSchemaBench(engine, {
    perCategory,
    maxTokens,
    concurrency: 16,
    extra,
    ...(only ? { only } : {}),
    progress: (r) =>
      console.error(`${resultTable([r]).split('\n')[2]} ${((performance.now() - t0) / 1000).toFixed(0)} s`),
  });
  console.log(resultTable(results));
  console.log(refusalSummary(results));
  for (const r of results)
    for (const s of r.invalidSamples.slice(0, 3)) console.log(`invalid ${r.category}: ${s}`);
  console.log(
    `max_tokens ${maxTokens}; ${((performance.now() - t0) / 1000).toFixed(0)} s; choices resampled after a failed check ${engine.features.structured.resampledChoices}, failed every attempt ${engine.features.structured.failedChecks}; load ${(
      await import('node:os')
    )
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  await engine.close();
}
