import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { commentLines, findDanglingCitations, missingCitations } from './check-comment-paths.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

test('no comment in the repository cites a file that does not exist', () => {
  assert.deepEqual(findDanglingCitations(root), []);
});

test('a citation of a renamed file is caught: bare names, root paths and relative paths', () => {
  const tracked = {
    files: new Set(['engine/scheduler.ts', 'engine/tools/tool-prompt.ts']),
    dirs: new Set(['engine', 'engine/tools']),
    list: ['engine/scheduler.ts', 'engine/tools/tool-prompt.ts'],
  };
  const basenames = new Set(['scheduler.ts', 'tool-prompt.ts']);
  const check = (comment: string) =>
    missingCitations(comment, 'engine/tools/registry.ts', tracked, basenames, root);
  assert.deepEqual(check(' taught by the built-in tool template (tool-template.ts).'), ['tool-template.ts']);
  assert.deepEqual(check(' see engine/scheduler.ts and engine/block-table.ts'), ['engine/block-table.ts']);
  assert.deepEqual(check(' the prompt (./tool-prompt.ts, ../scheduler.js)'), []);
  assert.deepEqual(check(' the prompt (./tool-template.ts)'), ['./tool-template.ts']);
  // Another project's file, named as such, and format names are not repository files.
  assert.deepEqual(check(" as vLLM's scheduler.cc does; config.json"), []);
});

test('comments are read, code and strings are not', () => {
  const text = [
    "import { x } from './missing.js'; // from engine-glue.ts",
    "const url = 'http://host/engine/nothing.ts';",
    '/* a block that names',
    '   forward.cc */ const y = 1;',
  ].join('\n');
  const lines = commentLines(text, 'ts');
  assert.match(lines[0], /engine-glue\.ts/);
  assert.doesNotMatch(lines[0], /missing/);
  assert.equal(lines[1], '');
  assert.match(lines[3], /forward\.cc/);
  assert.doesNotMatch(lines[3], /const y/);
});
