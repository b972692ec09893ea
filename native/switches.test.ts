/**
 * The native core's run-time switches (native/src/switches.h): docs/switches.md has a row for
 * each, and modelInfo reports the values a model was loaded with, as its environment set them
 * or refused them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpuFeatures, disposeModel, loadModel, modelInfo, nativeSwitches } from './native.js';
import { ensureDefaultModel } from '../engine/default-model.js';

test('docs/switches.md has a row for every switch with its values, default, reading time and effect', () => {
  const doc = readFileSync(new URL('../docs/switches.md', import.meta.url), 'utf8');
  // Table rows as their cells, backticks dropped: switch, values, default, read, what it does.
  const rows = doc
    .split('\n')
    .filter((line) => line.startsWith('| `PRISM_'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/`/g, '')),
    );
  const specs = nativeSwitches();
  assert.deepEqual(
    rows.map((cells) => cells[0]),
    specs.map((s) => s.name),
    "one row per switch, in the declarations' order",
  );
  for (const [i, s] of specs.entries()) {
    const [, values, byDefault, read, what] = rows[i]!;
    for (const v of s.values.includes('|') ? s.values.split('|') : [s.values])
      assert.ok(values!.includes(v), `${s.name}: values lack '${v}'`);
    assert.equal(byDefault, s.byDefault, `${s.name}: default`);
    assert.equal(read, s.read, `${s.name}: read`);
    assert.equal(what, s.what, `${s.name}: what it does`);
  }
});

test('modelInfo reports every switch as the load read it: a switch read at each use follows the environment', async () => {
  const path = ensureDefaultModel();
  const saved = process.env.PRISM_ACTIVATIONS;
  process.env.PRISM_ACTIVATIONS = 'int8';
  let model;
  try {
    model = await loadModel(path);
  } finally {
    if (saved === undefined) delete process.env.PRISM_ACTIVATIONS;
    else process.env.PRISM_ACTIVATIONS = saved;
  }
  try {
    const info = modelInfo(model);
    assert.deepEqual(
      Object.keys(info.switches),
      nativeSwitches().map((s) => s.name),
    );
    assert.deepEqual(info.switches.PRISM_ACTIVATIONS, { value: 'int8', source: 'environment' });
    assert.equal(info.activations, 'int8');
    assert.equal(info.switches.PRISM_ISA!.value, cpuFeatures().selected);
  } finally {
    disposeModel(model);
  }
});

test('a process reports the switches its environment set, and why a refused one keeps its default', () => {
  const native = new URL('./native.ts', import.meta.url).href;
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { loadModel, modelInfo } from '${native}';
       process.stdout.write(JSON.stringify(modelInfo(await loadModel(${JSON.stringify(ensureDefaultModel())})).switches));`,
    ],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        PRISM_ISA: 'reference',
        PRISM_AMX: 'yes',
        PRISM_DECODE_TUNING: 'rows=3',
        PRISM_CACHE_DIR: '/tmp/prism-switches-test',
      },
    },
  );
  assert.equal(run.status, 0, run.stderr);
  const switches = JSON.parse(run.stdout) as Record<
    string,
    { value: string; source: string; warning?: string }
  >;
  assert.deepEqual(switches.PRISM_ISA, { value: 'reference', source: 'environment' });
  assert.deepEqual(switches.PRISM_AMX, {
    value: '1',
    source: 'default',
    warning: "PRISM_AMX must be 0 or 1; got 'yes'",
  });
  assert.equal(switches.PRISM_DECODE_TUNING!.value, 'host');
  assert.match(switches.PRISM_DECODE_TUNING!.warning ?? '', /^PRISM_DECODE_TUNING /);
  assert.deepEqual(switches.PRISM_CACHE_DIR, { value: '/tmp/prism-switches-test', source: 'environment' });
  assert.match(run.stderr, /PRISM_AMX must be 0 or 1; got 'yes', using the default \(on where supported\)/);
});
