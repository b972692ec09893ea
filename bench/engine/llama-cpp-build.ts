/**
 * Where the benchmarks find llama.cpp built from source (scripts/build-llama-cpp.mjs): its bin
 * folder with llama-bench, llama-batched-bench and llama-server. PRISM_LLAMA_CPP_BIN names an
 * existing build; otherwise the checkout's own .llama-cpp/ build, made on demand (~25 min on
 * 2 cores) when `build` is set, since no benchmark should start a build its caller did not ask
 * for.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The bin folder, or undefined when there is no build and `build` is false. */
export function llamaCppBin(root: string, build: boolean): string | undefined {
  const script = join(root, 'scripts', 'build-llama-cpp.mjs');
  const where = spawnSync(process.execPath, [script, '--where'], { cwd: root, encoding: 'utf8' });
  if (where.status === 0) return where.stdout.trim();
  if (where.status !== 3)
    throw new Error(`scripts/build-llama-cpp.mjs --where failed: ${where.stderr.trim() || where.status}`);
  if (!build) return undefined;
  const made = spawnSync(process.execPath, [script], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (made.status !== 0)
    throw new Error(`scripts/build-llama-cpp.mjs failed (exit ${made.status ?? made.signal})`);
  return llamaCppBin(root, false);
}
