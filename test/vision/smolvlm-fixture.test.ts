/**
 * The smolvlm-tiny fixture (scripts/vision_fixtures.py) is a model transformers runs end to
 * end: its processor splits a 300x100 image into 2 x 4 tiles plus the global image, the chat
 * template's <image> expands to 9 x 16 image tokens, and the model generates from it
 * (test/vision/vision_reference.py check).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../../engine/default-model.js';
import { fixture, pythonCommand } from '../fixtures.js';

test('smolvlm-tiny: transformers loads it, tiles an image and generates from it', () => {
  const dir = fixture('smolvlm-tiny').path;
  const out = execFileSync(
    pythonCommand(),
    [join(projectRoot(), 'test', 'vision', 'vision_reference.py'), 'check', dir],
    {
      encoding: 'utf8',
      env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error', TQDM_DISABLE: '1' },
    },
  );
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as {
    tiles: number;
    rows: number;
    cols: number;
    promptTokens: number;
    generated: number[];
  };
  assert.deepEqual([r.tiles, r.rows, r.cols], [9, 2, 4]);
  assert.equal(r.generated.length, 6);
  assert.ok(r.generated.every((t) => Number.isInteger(t) && t >= 0 && t < 49280));
});
