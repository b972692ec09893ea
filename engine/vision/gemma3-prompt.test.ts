import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expandGemma3Text, findGemma3Images, GEMMA3_TOKENS } from './gemma3-prompt.js';

const [START, END, SOFT] = [5, 6, 7];
const ids = { start: START, end: END, soft: SOFT };
const image = () => ({ rows: 0, cols: 0, embeddings: new Float32Array(0) });

test("each <start_of_image> becomes Gemma3Processor's full_image_sequence, as text", () => {
  const { start, end, soft } = GEMMA3_TOKENS;
  assert.equal(
    expandGemma3Text(`a${start}b${start}`, 2),
    `a\n\n${start}${soft}${soft}${end}\n\nb\n\n${start}${soft}${soft}${end}\n\n`,
  );
  assert.equal(expandGemma3Text('no image', 2), 'no image');
});

test('the soft tokens of each image are its rows’ positions and one bidirectional span', () => {
  const out = findGemma3Images(
    [1, START, SOFT, SOFT, END, 2, START, SOFT, SOFT, END],
    [image(), image()],
    2,
    ids,
  );
  assert.deepEqual(out.ids, [1, START, SOFT, SOFT, END, 2, START, SOFT, SOFT, END]);
  assert.deepEqual([...out.positions], [2, 3, 7, 8]);
  assert.deepEqual([...out.bidirectional], [2, 4, 7, 9]);
});

test('an image cut, a stray image token or another image count is refused naming the prompt', () => {
  for (const prompt of [
    [1, START, SOFT, END], // one soft token short
    [1, START, SOFT, SOFT, END, SOFT], // a stray soft token
    [1, START, SOFT, SOFT, 2], // no end
    [1, 2], // no image
    [START, SOFT, SOFT, END, START, SOFT, SOFT, END], // two for one
  ])
    assert.throws(
      () => findGemma3Images(prompt, [image()], 2, ids),
      (e: Error & { field?: string }) => e.field === 'prompt' && /images' tokens/.test(e.message),
      JSON.stringify(prompt),
    );
});
