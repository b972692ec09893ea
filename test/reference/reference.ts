/**
 * Cached float32 reference logits from test/reference/logits.py (transformers + torch CPU).
 *
 * A reference run costs ~20 s of Python start-up plus the forward pass, so results are kept
 * in test/fixtures/generated/reference/, keyed by the sha256 of the model's bytes, the
 * input (ids, or text and the tokenizer's model) and logits.py's REFERENCE_VERSION: a
 * changed model, prompt or reference computation recomputes, nothing else does. Missing
 * results are computed in one Python call.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { projectRoot } from '../../engine/default-model.js';
import { generatedDir, pythonCommand } from '../fixtures.js';

export interface ReferenceJob {
  /** A .gguf file or a Hugging Face folder. */
  readonly model: string;
  /** Token ids to run, or */
  readonly ids?: readonly number[];
  /** text that the model's own tokenizer (in Python) turns into ids, without special tokens. */
  readonly text?: string;
  /** Tokenize `text` with this model's tokenizer instead (one that shares the vocabulary). */
  readonly tokenizer?: string;
  /** Keep at most this many tokens. */
  readonly maxTokens?: number;
  /** Config overrides for the reference model (e.g. `{ sliding_window: null }`). */
  readonly config?: Readonly<Record<string, unknown>>;
}

export interface ReferenceLogits {
  readonly ids: Int32Array;
  readonly positions: number;
  readonly vocab: number;
  /** Raw little-endian float32 [positions × vocab]. */
  readonly file: string;
  /** Rows [start, start + count) of the logits. */
  rows(start: number, count: number): Float32Array;
}

const referenceScript = (): string => join(projectRoot(), 'test', 'reference', 'logits.py');
const cacheDir = (): string => join(generatedDir(), 'reference');

const hashMemo = new Map<string, string>();

/** sha256 of a model's content: the file, or a folder's config, weights and tokenizer files. */
export function modelHash(path: string): string {
  const st = statSync(path);
  const memoKey = `${path}\0${st.size}\0${st.mtimeMs}`;
  const memo = hashMemo.get(memoKey);
  if (memo) return memo;
  const h = createHash('sha256');
  if (st.isDirectory()) {
    const names = readdirSync(path)
      .filter((n) => n.endsWith('.json') || n.endsWith('.safetensors'))
      .sort();
    for (const name of names) {
      h.update(name + '\0');
      h.update(readFileSync(join(path, name)));
    }
  } else {
    h.update(readFileSync(path));
  }
  const digest = h.digest('hex');
  hashMemo.set(memoKey, digest);
  return digest;
}

function cacheKey(job: ReferenceJob): string {
  const h = createHash('sha256');
  h.update(modelHash(job.model));
  h.update(
    JSON.stringify({
      ids: job.ids ?? null,
      text: job.text ?? null,
      maxTokens: job.maxTokens ?? null,
      ...(job.config ? { config: job.config } : {}),
    }),
  );
  h.update(readFileSync(referenceScript()));
  return h.digest('hex').slice(0, 32);
}

interface Meta {
  ids: number[];
  shape: [number, number];
  dtype: string;
}

export function openReference(prefix: string): ReferenceLogits | undefined {
  const metaPath = prefix + '.json';
  const file = prefix + '.f32';
  if (!existsSync(metaPath) || !existsSync(file)) return undefined;
  const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as Meta;
  const [positions, vocab] = meta.shape;
  if (meta.dtype !== 'float32' || statSync(file).size !== positions * vocab * 4) return undefined;
  return {
    ids: Int32Array.from(meta.ids),
    positions,
    vocab,
    file,
    rows(start: number, count: number): Float32Array {
      if (start < 0 || count < 0 || start + count > positions) {
        throw new RangeError(`reference rows [${start}, ${start + count}) outside [0, ${positions})`);
      }
      const out = new Float32Array(count * vocab);
      const bytes = new Uint8Array(out.buffer);
      const fd = openSync(file, 'r');
      try {
        let done = 0;
        while (done < bytes.length) {
          const n = readSync(fd, bytes, done, bytes.length - done, start * vocab * 4 + done);
          if (n <= 0) throw new Error(`${file}: short read`);
          done += n;
        }
      } finally {
        closeSync(fd);
      }
      return out;
    },
  };
}

/** Reference logits for each job, computing the uncached ones in a single Python run. */
export function referenceLogits(jobs: readonly ReferenceJob[]): ReferenceLogits[] {
  const prefixes = jobs.map((job) => join(cacheDir(), cacheKey(job)));
  const missing = jobs.map((job, i) => ({ job, out: prefixes[i] })).filter(({ out }) => !openReference(out));
  if (missing.length > 0) {
    const jobsFile = join(tmpdir(), `prism-reference-jobs-${process.pid}.json`);
    writeFileSync(jobsFile, JSON.stringify(missing.map(({ job, out }) => ({ ...job, out }))));
    process.stderr.write(`prism: computing ${missing.length} float reference run(s) with transformers ...\n`);
    try {
      execFileSync(pythonCommand(), [referenceScript(), '--jobs', jobsFile], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error', TQDM_DISABLE: '1' },
      });
    } catch (err) {
      throw new Error(
        `test/reference/logits.py failed (${(err as Error).message}); it needs ` +
          '`pip install -r requirements-dev.txt` (torch, transformers, gguf)',
      );
    }
  }
  return prefixes.map((prefix, i) => {
    const ref = openReference(prefix);
    if (!ref) throw new Error(`reference run for ${jobs[i].model} left no complete output at ${prefix}`);
    return ref;
  });
}
