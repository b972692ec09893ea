/**
 * Where and from what a benchmark ran: the commit and a one-line machine description, for
 * the header of every result written to docs/benchmarks.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** Short commit id, marked when the working tree has uncommitted changes. */
export function describeCommit(cwd: string): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head} (+ uncommitted changes)` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** CPU model, logical cores, RAM and the SIMD extensions that matter to the kernels. */
export function describeMachine(): string {
  const model = cpus()[0]?.model?.trim() ?? 'unknown CPU';
  let flags = new Set<string>();
  try {
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    const line = cpuinfo.split('\n').find((l) => l.startsWith('flags'));
    if (line) flags = new Set(line.split(':')[1].trim().split(/\s+/));
  } catch {
    // not Linux: no flag list
  }
  const simd = ['avx2', 'fma', 'f16c', 'avx512f', 'avx512_vnni', 'avx512_bf16'].filter((f) => flags.has(f));
  const ram = (totalmem() / 2 ** 30).toFixed(0);
  return (
    `${model}, ${cpus().length} logical cores, ${ram} GiB RAM, ${simd.length ? simd.join('/') : 'no AVX2'}` +
    (flags.size && !flags.has('avx512f') ? ' (no AVX-512)' : '')
  );
}
