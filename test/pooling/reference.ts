/**
 * Cached float32 references of pooling models (test/pooling/pooling_reference.py:
 * sentence-transformers on torch CPU, and a torch NomicBERT). Like test/reference/reference.ts:
 * kept in test/fixtures/generated/reference/, keyed by the model's content, the job's inputs
 * and the script, so a run costs Python's start-up only once per change.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';
import { generatedDir, pythonCommand } from '../fixtures.js';
import { modelHash } from '../reference/reference.js';

export type PoolingJob =
  | { readonly kind: 'embed'; readonly model: string; readonly texts: readonly string[] }
  | { readonly kind: 'embed'; readonly model: string; readonly ids: readonly (readonly number[])[] }
  | { readonly kind: 'score'; readonly model: string; readonly pairs: readonly (readonly [string, string])[] }
  | { readonly kind: 'nomic'; readonly model: string; readonly ids: readonly (readonly number[])[] }
  | {
      readonly kind: 'yesno';
      readonly model: string;
      readonly ids: readonly (readonly number[])[];
      /** [no, yes] token ids. */
      readonly tokens: readonly [number, number];
    };

export interface PoolingReference {
  /** The ids (special tokens included) and token types the reference ran, per input. */
  readonly ids: number[][];
  readonly typeIds: number[][];
  /** kind embed / nomic: one sentence embedding per input (after its Normalize module, if any). */
  readonly embeddings?: number[][];
  /** kind score: raw logits and predict()'s scores per pair. */
  readonly logits?: number[][];
  readonly scores?: number[][];
}

const script = (): string => join(projectRoot(), 'test', 'pooling', 'pooling_reference.py');

function cacheFile(job: PoolingJob): string {
  const h = createHash('sha256');
  h.update(modelHash(job.model));
  h.update(JSON.stringify({ ...job, model: null }));
  h.update(readFileSync(script()));
  return join(generatedDir(), 'reference', `pooling-${h.digest('hex').slice(0, 32)}.json`);
}

/** The references of `jobs`, computing the uncached ones in one Python run. */
export function poolingReferences(jobs: readonly PoolingJob[]): PoolingReference[] {
  const files = jobs.map(cacheFile);
  const missing = jobs.map((job, i) => ({ ...job, out: files[i]! })).filter((j) => !existsSync(j.out));
  if (missing.length > 0) {
    mkdirSync(join(generatedDir(), 'reference'), { recursive: true });
    const jobsFile = join(tmpdir(), `prism-pooling-jobs-${process.pid}.json`);
    writeFileSync(jobsFile, JSON.stringify(missing));
    process.stderr.write(
      `prism: computing ${missing.length} float pooling reference(s) (sentence-transformers) ...\n`,
    );
    execFileSync(pythonCommand(), [script(), '--jobs', jobsFile], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error', TQDM_DISABLE: '1' },
    });
  }
  return files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as PoolingReference);
}

/** cos(a, b) (engine/pooling/outputs.ts's, the one the engine scores pairs with). */
export { cosine } from '../../engine/pooling/outputs.js';
