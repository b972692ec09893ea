/**
 * The two trained adapters of scripts/train-adapters.py (French answers, capital letters),
 * made on first use into the git-ignored test/fixtures/generated/trained-adapters/ and
 * remade when the script changes. Training takes a minute or two per adapter on 2 quiet
 * CPU cores (measured numbers in the manifest: `seconds`).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import { generatedDir, pythonCommand } from './fixtures.js';

export interface TrainedAdapters {
  /** Adapter directory by name ('fr', 'caps'). */
  readonly paths: Readonly<Record<'fr' | 'caps', string>>;
  /** Prompts about countries the training data left out. */
  readonly heldOut: readonly string[];
}

const dir = (): string => join(generatedDir(), 'trained-adapters');
const script = (): string => join(projectRoot(), 'scripts', 'train-adapters.py');

function fresh(): TrainedAdapters | undefined {
  const manifest = join(dir(), 'manifest.json');
  if (!existsSync(manifest)) return undefined;
  try {
    const m = JSON.parse(readFileSync(manifest, 'utf8')) as { generator: string; heldOut: string[] };
    const hash = createHash('sha256').update(readFileSync(script())).digest('hex');
    if (m.generator !== hash) return undefined;
    const paths = { fr: join(dir(), 'fr'), caps: join(dir(), 'caps') };
    return Object.values(paths).every((p) => existsSync(join(p, 'adapter_model.safetensors')))
      ? { paths, heldOut: m.heldOut }
      : undefined;
  } catch {
    return undefined;
  }
}

export function ensureTrainedAdapters(): TrainedAdapters {
  const have = fresh();
  if (have) return have;
  const model = ensureDefaultModel();
  process.stderr.write('prism: training the example adapters (scripts/train-adapters.py) ...\n');
  execFileSync(pythonCommand(), [script(), '--model', model, '--out', dir()], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, HF_HUB_OFFLINE: '1', TQDM_DISABLE: '1' },
  });
  const made = fresh();
  if (!made) throw new Error('scripts/train-adapters.py ran but left no fresh manifest.json');
  return made;
}
