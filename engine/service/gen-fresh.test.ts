/**
 * gen/ holds ts-proto output that nobody edits by hand: regenerate it from proto/ into a
 * temp folder and require byte-identical files, so a proto change without `npm run gen:proto`
 * (or a hand edit of gen/) fails here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function files(dir: string, base = dir, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) files(full, base, out);
    else out.push(relative(base, full));
  }
  return out.sort();
}

test('gen/ is what scripts/gen-proto.mjs makes from proto/', () => {
  const out = mkdtempSync(join(tmpdir(), 'prism-gen-'));
  try {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'gen-proto.mjs'), out], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `gen-proto failed:\n${r.stdout}\n${r.stderr}`);
    const fresh = files(out);
    assert.ok(fresh.length > 0, 'the generator wrote nothing');
    assert.deepEqual(files(join(root, 'gen')), fresh, 'gen/ has different files: run `npm run gen:proto`');
    for (const f of fresh) {
      const committed = readFileSync(join(root, 'gen', f), 'utf8');
      assert.ok(
        committed === readFileSync(join(out, f), 'utf8'),
        `gen/${f} is stale or edited by hand: run \`npm run gen:proto\``,
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
