/**
 * Cached float32 reference logits of a base model with a PEFT adapter applied
 * (test/reference/lora_logits.py: transformers + peft). Cached like reference.ts, keyed by
 * the sha256 of the model, the adapter folder, the input and the script.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';
import { generatedDir, pythonCommand } from '../fixtures.js';
import { modelHash, openReference, type ReferenceJob, type ReferenceLogits } from './reference.js';

export interface LoraReferenceJob extends ReferenceJob {
  /** PEFT adapter directory. */
  readonly adapter: string;
}

const script = (): string => join(projectRoot(), 'test', 'reference', 'lora_logits.py');

function cacheKey(job: LoraReferenceJob): string {
  const h = createHash('sha256');
  h.update(modelHash(job.model));
  h.update(modelHash(job.adapter));
  h.update(
    JSON.stringify({ ids: job.ids ?? null, text: job.text ?? null, maxTokens: job.maxTokens ?? null }),
  );
  h.update(readFileSync(script()));
  h.update(readFileSync(join(projectRoot(), 'test', 'reference', 'logits.py')));
  return h.digest('hex').slice(0, 32);
}

export function loraReferenceLogits(jobs: readonly LoraReferenceJob[]): ReferenceLogits[] {
  const prefixes = jobs.map((job) => join(generatedDir(), 'reference', 'lora-' + cacheKey(job)));
  const missing = jobs.map((job, i) => ({ ...job, out: prefixes[i] })).filter((j) => !openReference(j.out));
  if (missing.length > 0) {
    const jobsFile = join(tmpdir(), `prism-lora-reference-jobs-${process.pid}.json`);
    writeFileSync(jobsFile, JSON.stringify(missing));
    process.stderr.write(
      `prism: computing ${missing.length} float LoRA reference run(s) with transformers + peft ...\n`,
    );
    execFileSync(pythonCommand(), [script(), '--jobs', jobsFile], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error', TQDM_DISABLE: '1' },
    });
  }
  return prefixes.map((prefix, i) => {
    const ref = openReference(prefix);
    if (!ref)
      throw new Error(`LoRA reference run for ${jobs[i]!.adapter} left no complete output at ${prefix}`);
    return ref;
  });
}
