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
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
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
  /** The engine failed the request after compiling (should be 0). */
  errors: number;
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
    if (/does not compile|did not compile/.test(message)) {
      r.compileFailed++;
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
  if (!f || f.reason === 'error') {
    r.errors++;
    return;
  }
  if (f.reason === 'length') {
    r.length++;
    return;
  }
  r.completed++;
  let validate;
  try {
    const { $schema: _s, ...schema } = JSON.parse(text) as Record<string, unknown>;
    validate = validator.compile(schema);
  } catch {
    r.unvalidatable++;
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
  options: { perCategory?: number; maxTokens: number; concurrency: number },
): Promise<CategoryResult[]> {
  const dir = jsonSchemaBenchDir();
  const results: CategoryResult[] = [];
  for (const category of CATEGORIES) {
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
      unvalidatable: 0,
      refusals: new Map(),
      invalidSamples: [],
      compileMs: [],
    };
    const validator = new Ajv2020({ strict: false, allErrors: false });
    addFormats.default(validator);
    const files = sampleFiles(join(dir, category), options.perCategory);
    r.schemas = files.length;
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const file = files[next++];
        await runOne(
          engine,
          readFileSync(join(dir, category, file), 'utf8'),
          options.maxTokens,
          r,
          validator,
        );
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    results.push(r);
  }
  return results;
}

const pct = (a: number, b: number) => (b === 0 ? '—' : `${((100 * a) / b).toFixed(1)}%`);

export function resultTable(results: readonly CategoryResult[]): string {
  const rows = [
    '| category | schemas | compiled | refused | compile failed | completed | valid / completed | cut by max_tokens | errors |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    rows.push(
      `| ${r.category} | ${r.schemas} | ${r.compiled} (${pct(r.compiled, r.schemas)}) | ${r.refused} | ${r.compileFailed} | ${r.completed} | ${r.valid}/${r.completed - r.unvalidatable} (${pct(r.valid, r.completed - r.unvalidatable)}) | ${r.length} | ${r.errors} |`,
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

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
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
  const results = await runJsonSchemaBench(engine, { perCategory, maxTokens, concurrency: 16 });
  console.log(resultTable(results));
  console.log(refusalSummary(results));
  for (const r of results)
    for (const s of r.invalidSamples.slice(0, 3)) console.log(`invalid ${r.category}: ${s}`);
  console.log(`max_tokens ${maxTokens}; ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  await engine.close();
}
