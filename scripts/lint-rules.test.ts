/**
 * The lint's import rules (.dependency-cruiser.mjs) and dead-code check (knip.jsonc) fail on a
 * planted violation: each rule is run, with the project's own config, over a small tree in a
 * temporary folder that breaks it once beside files that keep it, and must name exactly the
 * planted import; and the repository itself passes both, as `npm run lint` checks.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/** path → the files it imports (relative specifiers, `.js` as in the sources). */
type Tree = Record<string, readonly string[]>;

function writeTree(dir: string, tree: Tree): void {
  for (const [file, imports] of Object.entries(tree)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    const lines = imports.map((to, i) => `import { x as x${i} } from '${to}';`);
    writeFileSync(join(dir, file), `${lines.join('\n')}\nexport const x = ${imports.length};\n`);
  }
}

/** Files every planted tree shares: the engine's public door, the ground floor, a feature. */
const BASE: Tree = {
  'engine/api.ts': ['./types.js', './errors.js'],
  'engine/types.ts': ['./pd-types.js'],
  'engine/errors.ts': [],
  'engine/pd-types.ts': [],
  'engine/scheduler.ts': ['./types.js'],
  'engine/load-engine.ts': ['./scheduler.js', './structured/grammar.js'],
  'engine/structured/grammar.ts': ['../scheduler.js', '../types.js'],
  'engine/service/mapping.ts': ['../types.js'],
  'gateways/openai/chat.ts': ['../../engine/api.js', '../shared/sse.js'],
  'gateways/shared/sse.ts': [],
  'cli/main.ts': ['../engine/api.js', '../engine/load-engine.js', '../gateways/openai/chat.js'],
  'native/native.ts': [],
  'config/load.ts': ['../engine/api.js'],
  'bench/engine.ts': ['../engine/scheduler.js'],
  'test/harness.ts': ['../engine/structured/grammar.js'],
  'engine/scheduler.test.ts': ['./structured/grammar.js', '../test/harness.js'],
};

interface Violation {
  readonly rule: string;
  readonly from: string;
  readonly to: string;
}

let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prism-lint-rules-'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** dependency-cruiser with the project's config over BASE plus `planted`, in a fresh folder. */
function cruise(name: string, planted: Tree): Violation[] {
  const at = join(dir, name);
  writeTree(at, { ...BASE, ...planted });
  copyFileSync(join(root, '.dependency-cruiser.mjs'), join(at, '.dependency-cruiser.mjs'));
  writeFileSync(
    join(at, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
  );
  const folders = ['engine', 'gateways', 'cli', 'native', 'config', 'bench', 'test'];
  const r = spawnSync(bin('depcruise'), ['--output-type', 'json', ...folders], { cwd: at, encoding: 'utf8' });
  assert.ok(r.stdout, `depcruise printed nothing: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as {
    summary: { violations: { rule: { name: string }; from: string; to: string }[] };
  };
  return report.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
}

/** The lint's own commands (package.json), run over the repository: CI runs `npm test`, not the lint. */
function lintScript(name: string): { status: number | null; out: string } {
  const scripts = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const [cmd, ...args] = scripts[name]!.split(' ');
  const r = spawnSync(bin(cmd!), args, { cwd: root, encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('the repository keeps every import rule and has no dead export', () => {
  const imports = lintScript('lint:imports');
  assert.equal(imports.status, 0, imports.out);
  const dead = lintScript('lint:dead');
  assert.equal(dead.status, 0, dead.out);
});

test('the base tree keeps every import rule', () => {
  assert.deepEqual(cruise('base', {}), []);
});

const plants: [rule: string, planted: Tree, from: string, to: string][] = [
  ['no-circular', { 'engine/types.ts': ['./pd-types.js'], 'engine/pd-types.ts': ['./types.js'] }, '', ''],
  [
    'gateways-through-engine-api',
    { 'gateways/anthropic/messages.ts': ['../../engine/structured/grammar.js'] },
    'gateways/anthropic/messages.ts',
    'engine/structured/grammar.ts',
  ],
  [
    'cli-through-engine-entries',
    { 'cli/main.ts': ['../engine/api.js', '../engine/scheduler.js'] },
    'cli/main.ts',
    'engine/scheduler.ts',
  ],
  [
    'core-not-feature',
    { 'engine/scheduler.ts': ['./types.js', './vision/encoder.js'], 'engine/vision/encoder.ts': [] },
    'engine/scheduler.ts',
    'engine/vision/encoder.ts',
  ],
  [
    'engine-not-service-layer',
    { 'engine/structured/grammar.ts': ['../scheduler.js', '../service/mapping.js'] },
    'engine/structured/grammar.ts',
    'engine/service/mapping.ts',
  ],
  ['ground-floor', { 'engine/errors.ts': ['./scheduler.js'] }, 'engine/errors.ts', 'engine/scheduler.ts'],
  [
    'floors-gateways',
    { 'engine/scheduler.ts': ['./types.js', '../gateways/shared/sse.js'] },
    'engine/scheduler.ts',
    'gateways/shared/sse.ts',
  ],
  [
    'floors-cli',
    { 'gateways/shared/sse.ts': ['../../cli/flags.js'], 'cli/flags.ts': [] },
    'gateways/shared/sse.ts',
    'cli/flags.ts',
  ],
  [
    'floors-config',
    { 'engine/scheduler.ts': ['./types.js', '../config/load.js'] },
    'engine/scheduler.ts',
    'config/load.ts',
  ],
  ['floors-engine', { 'native/native.ts': ['../engine/types.js'] }, 'native/native.ts', 'engine/types.ts'],
  [
    'no-test-or-bench-in-production',
    { 'gateways/shared/sse.ts': ['../../bench/engine.js'] },
    'gateways/shared/sse.ts',
    'bench/engine.ts',
  ],
  [
    'no-test-or-bench-in-production',
    { 'engine/load-engine.ts': ['./scheduler.js', './testing/sim.js'], 'engine/testing/sim.ts': [] },
    'engine/load-engine.ts',
    'engine/testing/sim.ts',
  ],
];

for (const [i, [rule, planted, from, to]] of plants.entries()) {
  test(`${rule} fails on a planted violation${from ? ` (${from} -> ${to})` : ''}`, () => {
    const found = cruise(`plant-${i}`, planted);
    if (rule === 'no-circular') {
      assert.ok(found.length > 0 && found.every((v) => v.rule === rule), JSON.stringify(found));
      return;
    }
    assert.deepEqual(found, [{ rule, from, to }]);
  });
}

test('knip fails on a planted dead export, and passes once it is file-local', () => {
  const at = join(dir, 'knip');
  mkdirSync(join(at, 'src'), { recursive: true });
  copyFileSync(join(root, 'knip.jsonc'), join(at, 'knip.jsonc'));
  writeFileSync(join(at, 'package.json'), JSON.stringify({ name: 'planted', private: true, type: 'module' }));
  writeFileSync(join(at, 'src', 'main.test.ts'), "import { used } from './lib.js';\nconsole.log(used());\n");
  const knip = () =>
    spawnSync(bin('knip'), ['--no-progress', '--include', 'exports,types,files'], {
      cwd: at,
      encoding: 'utf8',
    });
  writeFileSync(
    join(at, 'src', 'lib.ts'),
    'export function used(): number {\n  return LIMIT;\n}\nexport const LIMIT = 3;\n',
  );
  const dead = knip();
  assert.notEqual(dead.status, 0, dead.stdout);
  assert.match(dead.stdout, /Unused exports[^\n]*\n\s*LIMIT\s+src\/lib\.ts/);
  writeFileSync(
    join(at, 'src', 'lib.ts'),
    'export function used(): number {\n  return LIMIT;\n}\nconst LIMIT = 3;\n',
  );
  const clean = knip();
  assert.equal(clean.status, 0, clean.stdout + clean.stderr);
});
