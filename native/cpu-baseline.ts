/**
 * The CPU the native core needs: x86-64 with AVX2, FMA, F16C and BMI2 (Intel Haswell, AMD
 * Zen or newer). binding.gyp compiles the whole addon with those instruction sets (the
 * forward pass uses AVX2 intrinsics directly; only the AVX-512 kernels sit behind a run-time
 * check), so on an older CPU loading it would end the process with an illegal instruction.
 * native.ts asks this module first and refuses with a message instead.
 *
 * Why a refusal rather than a portable fallback: every x86-64 server CPU sold since 2013
 * has these, and routing the forward pass through the kernels' ISA dispatch would put an
 * indirection on the decode hot path for machines nobody serves on. `PRISM_ISA=reference`
 * selects the plain reference kernels (the kernel tests' oracle); it lowers the kernels'
 * level, not the baseline.
 */
import { readFileSync } from 'node:fs';

/** The instruction-set flags (as /proc/cpuinfo names them) the addon is compiled for. */
const CPU_BASELINE = ['avx2', 'fma', 'f16c', 'bmi2'] as const;

/** The baseline flags missing from a /proc/cpuinfo text (its first `flags` line). */
export function missingCpuFeatures(cpuinfo: string): string[] {
  const line = /^flags\s*:(.*)$/m.exec(cpuinfo);
  if (!line) return [];
  const flags = new Set(line[1].trim().split(/\s+/));
  return CPU_BASELINE.filter((f) => !flags.has(f));
}

/** Throws, naming what is missing, when this machine cannot run the native core. */
export function checkCpuBaseline(arch: string = process.arch, cpuinfo?: string): void {
  if (arch !== 'x64')
    throw new Error(
      `Prism's native core runs on x86-64 CPUs (with AVX2, FMA, F16C, BMI2); this machine is ${arch}`,
    );
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return; // no /proc (not Linux): nothing to read, the addon's own build target decides
    }
  }
  const missing = missingCpuFeatures(text);
  if (missing.length > 0)
    throw new Error(
      `Prism's native core needs an x86-64 CPU with ${CPU_BASELINE.join(', ').toUpperCase()} ` +
        `(Intel Haswell, AMD Zen or newer); this CPU lacks ${missing.join(', ').toUpperCase()}`,
    );
}
