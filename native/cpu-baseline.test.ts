import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkCpuBaseline, missingCpuFeatures } from './cpu-baseline.js';

const haswell = 'processor\t: 0\nflags\t\t: fpu sse2 avx fma f16c bmi1 avx2 bmi2 popcnt\n';
const sandyBridge = 'processor\t: 0\nflags\t\t: fpu sse2 avx popcnt\n';

test('the baseline is AVX2 + FMA + F16C + BMI2: a Haswell-class CPU passes, an older one is refused naming what it lacks', () => {
  assert.deepEqual(missingCpuFeatures(haswell), []);
  assert.deepEqual(missingCpuFeatures(sandyBridge), ['avx2', 'fma', 'f16c', 'bmi2']);
  assert.doesNotThrow(() => checkCpuBaseline('x64', haswell));
  assert.throws(() => checkCpuBaseline('x64', sandyBridge), /lacks AVX2, FMA, F16C, BMI2/);
  assert.throws(() => checkCpuBaseline('arm64', haswell), /runs on x86-64 CPUs.*this machine is arm64/);
});

test('this machine, which runs the tests, meets the baseline', () => {
  assert.doesNotThrow(() => checkCpuBaseline());
});
