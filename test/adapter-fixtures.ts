/**
 * Random-weight PEFT adapters for tests, made by scripts/make-adapters.py (with `peft`)
 * into the git-ignored test/fixtures/generated/adapters/, once per version of the script.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import { ensureFixtures, generatedDir, pythonCommand } from './fixtures.js';

export interface AdapterFixture {
  readonly name: string;
  /** 'default' (the default model), or a model fixture's name. */
  readonly base: string;
  /** Absolute path of the adapter directory. */
  readonly path: string;
  readonly rank: number;
  readonly targets: readonly string[];
  /** B = 0: no effect. */
  readonly zero: boolean;
}

const adaptersDir = (): string => join(generatedDir(), 'adapters');
const script = (): string => join(projectRoot(), 'scripts', 'make-adapters.py');

function fresh(): AdapterFixture[] | undefined {
  const path = join(adaptersDir(), 'manifest.json');
  if (!existsSync(path)) return undefined;
  try {
    const m = JSON.parse(readFileSync(path, 'utf8')) as { generator: string; adapters: AdapterFixture[] };
    const hash = createHash('sha256').update(readFileSync(script())).digest('hex');
    if (m.generator !== hash) return undefined;
    const list = m.adapters.map((a) => ({ ...a, path: join(adaptersDir(), a.path) }));
    return list.every((a) => existsSync(a.path)) ? list : undefined;
  } catch {
    return undefined;
  }
}

function ensureAdapterFixtures(): AdapterFixture[] {
  const have = fresh();
  if (have) return have;
  const defaultModel = ensureDefaultModel();
  ensureFixtures();
  process.stderr.write('prism: generating adapter fixtures (scripts/make-adapters.py) ...\n');
  execFileSync(
    pythonCommand(),
    [script(), '--default-model', defaultModel, '--fixtures', generatedDir(), '--out', adaptersDir()],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, HF_HUB_OFFLINE: '1', TQDM_DISABLE: '1' },
    },
  );
  const made = fresh();
  if (!made) throw new Error('scripts/make-adapters.py ran but left no fresh manifest.json');
  return made;
}

export function adapterFixture(name: string): AdapterFixture {
  const found = ensureAdapterFixtures().find((a) => a.name === name);
  if (!found) throw new Error(`no adapter fixture named ${name}`);
  return found;
}
