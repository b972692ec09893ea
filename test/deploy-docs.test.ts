/**
 * docs/deploy.md's commands are the ones the tests run: every command in a ```sh deploy-test
 * block is matched against what test/deploy-manifests.test.ts and deploy/validate.py do — the
 * chart, release name, namespace and values files that are rendered and validated, the KServe
 * manifests that are validated, `prism serve` flags that parse, the Secret the manifests mount.
 * A command of another form fails the test, so a new one needs a check here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serveOptions } from '../cli/serve.js';
import { projectRoot } from '../engine/default-model.js';

const root = projectRoot();
/** What deploy/validate.py renders: release "demo" in namespace "llm", defaults + test-values/. */
const RELEASE = 'demo';
const NAMESPACE = 'llm';
const CHART = 'deploy/helm/prism';
const VALUES = readdirSync(join(root, 'deploy/helm/test-values')).map((f) => `deploy/helm/test-values/${f}`);
const KSERVE = readdirSync(join(root, 'deploy/kserve')).map((f) => `deploy/kserve/${f}`);

/** Shell words of one command line (quotes removed; enough for these docs). */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

function commands(): string[][] {
  const doc = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
  const blocks = [...doc.matchAll(/```sh deploy-test\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.flatMap((b) =>
    b
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(words),
  );
}

function checkHelm(w: string[]): void {
  const { values, positionals } = parseArgs({
    args: w.slice(2),
    options: {
      namespace: { type: 'string' },
      'create-namespace': { type: 'boolean' },
      f: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  assert.deepEqual(positionals, [RELEASE, CHART], w.join(' '));
  assert.equal(values.namespace, NAMESPACE);
  if (values.f !== undefined) assert.ok(VALUES.includes(values.f), `${values.f} is rendered by validate.py`);
}

test('docs/deploy.md: every deploy-test command is one the tests run', () => {
  const cmds = commands();
  assert.ok(cmds.length >= 10, `${cmds.length} commands`);
  const seen = new Set<string>();
  for (const w of cmds) {
    const line = w.join(' ');
    if (w[0] === 'helm' && w[1] === 'install') {
      checkHelm(w);
      seen.add(`helm ${w.includes('-f') ? w[w.indexOf('-f') + 1] : 'default'}`);
    } else if (w[0] === 'kubectl' && w[1] === 'apply') {
      assert.equal(w[2], '-f', line);
      assert.ok(KSERVE.includes(w[3]), `${w[3]} is validated by validate.py`);
      seen.add(w[3]);
    } else if (w[0] === 'kubectl' && w.includes('port-forward')) {
      assert.deepEqual(w.slice(-2), [`svc/${RELEASE}-prism`, '8000'], line);
      assert.ok(w.includes(NAMESPACE), line);
    } else if (w[0] === 'kubectl' && w[1] === 'create' && w[2] === 'secret') {
      // The Secret the KServe manifests mount, with the key file name they read.
      assert.equal(w[4], 'prism-management', line);
      assert.match(w[5], /^--from-literal=management-api-keys=/);
      for (const f of ['deploy/kserve/servingruntime.yaml', 'deploy/kserve/llminferenceservice.yaml'])
        assert.match(readFileSync(join(root, f), 'utf8'), /secretName: prism-management/);
    } else if (w[0] === 'curl') {
      assert.match(line, /^curl http:\/\/127\.0\.0\.1:8000\/v1\/chat\/completions /);
      assert.match(line, /"model":"SmolLM2-135M-Instruct"/, 'the chart default model name');
    } else if (w[0] === 'prism' && w[1] === 'serve') {
      const v = parseArgs({
        args: w.slice(2),
        options: serveOptions,
        strict: true,
        allowPositionals: false,
      }).values;
      assert.ok(v['kv-events-endpoint'], line);
    } else if (w[0] === 'python3') {
      assert.deepEqual(w.slice(1), ['deploy/validate.py'], 'what test/deploy-manifests.test.ts runs');
      assert.ok(existsSync(join(root, w[1])));
    } else {
      assert.fail(`a deploy-test command of an unchecked form: ${line}`);
    }
  }
  for (const want of ['helm default', ...VALUES.map((f) => `helm ${f}`), ...KSERVE])
    assert.ok(seen.has(want), `docs/deploy.md shows ${want}`);
});
