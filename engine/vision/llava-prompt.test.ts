import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expandLlavaImages } from './llava-prompt.js';

const IMAGE = 7;
const image = (rows = 0, cols = 0) => ({ rows, cols, embeddings: new Float32Array(0) });

test('each <image> becomes tokensPerImage image tokens, in place, the rows placed at them in order', () => {
  const out = expandLlavaImages([1, IMAGE, 2, 3, IMAGE, 4], [image(), image()], 3, IMAGE);
  assert.deepEqual(out.ids, [1, IMAGE, IMAGE, IMAGE, 2, 3, IMAGE, IMAGE, IMAGE, 4]);
  assert.deepEqual([...out.positions], [1, 2, 3, 6, 7, 8]);
});

test('a placeholder count other than the image count is refused naming the prompt', () => {
  for (const ids of [
    [1, 2],
    [IMAGE, IMAGE, 1],
  ])
    assert.throws(
      () => expandLlavaImages(ids, [image()], 3, IMAGE),
      (e: Error & { field?: string }) =>
        e.field === 'prompt' && /image placeholder tokens \(<image>\) for 1 images/.test(e.message),
    );
});
