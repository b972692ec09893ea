/**
 * smolvlm-tiny as llama.cpp's files carry it (scripts/vision_fixtures.py: the text GGUF and the
 * mmproj GGUF of the folder's very weights, as convert_hf_to_gguf.py writes SmolVLM):
 *
 * - the mmproj GGUF loads as the same encoder as the folder: equal visionInfo (the image
 *   tokens' ids from the text GGUF's vocabulary), equal tiles from preprocessImage, and
 *   encodeImage features equal to the folder's to float rounding; its F16 twin within F16
 *   rounding of them;
 * - the text GGUF loads as the decoder (a llama GGUF of 49,280 tokens whose added tokens are
 *   single tokens) and its logits equal transformers' Idefics3 text model on the same ids;
 * - a wrong pairing, a truncated or altered mmproj are refused naming the file or option.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { projectRoot } from '../../engine/default-model.js';
import { greedySampling } from '../../engine/step-plan.js';
import { loadTokenizer } from '../../engine/tokenizer/load.js';
import * as native from '../../native/native.js';
import { fixture, pythonCommand } from '../fixtures.js';

let folder: native.VisionModelHandle;
let mmproj: native.VisionModelHandle;
let dir = '';
let textGguf = '';
let mmprojGguf = '';

before(async () => {
  dir = fixture('smolvlm-tiny').path;
  textGguf = fixture('smolvlm-tiny-f32').path;
  mmprojGguf = fixture('mmproj-smolvlm-tiny-f32').path;
  folder = await native.loadVisionModel(dir, { threads: 2 });
  mmproj = await native.loadVisionModel(mmprojGguf, { threads: 2, textModel: textGguf });
});
after(() => {
  native.disposeVisionModel(folder);
  native.disposeVisionModel(mmproj);
});

/** ‖a − ref‖ / ‖ref‖. */
function relativeError(a: Float32Array, ref: Float32Array): number {
  assert.equal(a.length, ref.length);
  let diff = 0,
    norm = 0;
  for (let i = 0; i < ref.length; i++) {
    diff += (a[i] - ref[i]) ** 2;
    norm += ref[i] ** 2;
  }
  assert.ok(norm > 0, 'the reference is all zeros');
  return Math.sqrt(diff / norm);
}

/** 300 x 100 RGB (a 2 x 4 split plus the global image): smooth colour with detail in it. */
function testImage(): Uint8Array {
  return Uint8Array.from({ length: 300 * 100 * 3 }, (_, i) => {
    const p = Math.floor(i / 3),
      x = p % 300,
      y = Math.floor(p / 300),
      c = i % 3;
    return Math.round(127.5 + 127.5 * Math.sin(x / (9 + 4 * c) + y / 13 + c));
  });
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

test('isVisionModel: the mmproj GGUF is one, the text GGUF is not', () => {
  assert.equal(native.isVisionModel(mmprojGguf), true);
  assert.equal(native.isVisionModel(textGguf), false);
  assert.equal(native.isVisionModel(dir), true);
});

test('visionInfo: the mmproj describes the folder’s encoder, processor and image tokens', () => {
  const a = native.visionInfo(folder);
  const b = native.visionInfo(mmproj);
  const { path: _pa, name: _na, ...fromFolder } = a;
  const { path: _pb, name: _nb, ...fromGguf } = b;
  assert.deepEqual(fromGguf, fromFolder);
  assert.equal(b.tokens.image.id, 49190);
  assert.equal(b.tokens.rowCol[6 * 2 + 3].id, 49153 + 6 * 2 + 3);
});

test('the mmproj without its text model: the image tokens have no ids', async () => {
  const bare = await native.loadVisionModel(mmprojGguf, { threads: 1 });
  try {
    const t = native.visionInfo(bare).tokens;
    assert.deepEqual([t.image.id, t.fakeAroundImage.id, t.globalImage.id], [-1, -1, -1]);
    assert.ok(t.rowCol.every((x) => x.id === -1));
  } finally {
    native.disposeVisionModel(bare);
  }
});

test('preprocessImage then encodeImage: the mmproj’s features equal the folder’s', async () => {
  const width = 300,
    height = 100;
  const rgb = testImage();
  const pa = await native.preprocessImage(folder, rgb, width, height);
  const pb = await native.preprocessImage(mmproj, rgb, width, height);
  assert.deepEqual([pb.tileCount, pb.rows, pb.cols], [9, 2, 4]);
  assert.deepEqual([pb.tileCount, pb.rows, pb.cols], [pa.tileCount, pa.rows, pa.cols]);
  assert.deepEqual(pb.tiles, pa.tiles);
  const fa = await native.encodeImage(folder, pa.tiles, pa.tileCount);
  const fb = await native.encodeImage(mmproj, pb.tiles, pb.tileCount);
  assert.equal(fb.length, 9 * 16 * 128);
  const rel = relativeError(fb, fa);
  assert.ok(rel <= 1e-6, `relative error ${rel}`);
});

test('an F16 mmproj (as --outtype f16 writes it) encodes as the F32 one to F16 rounding', async () => {
  const half = await native.loadVisionModel(fixture('mmproj-smolvlm-tiny-f16').path, { threads: 2 });
  try {
    assert.ok(native.visionInfo(half).weightBytes < native.visionInfo(mmproj).weightBytes);
    const p = await native.preprocessImage(mmproj, testImage(), 300, 100);
    const full = await native.encodeImage(mmproj, p.tiles, p.tileCount);
    const rel = relativeError(await native.encodeImage(half, p.tiles, p.tileCount), full);
    // F16 weights (2^-11 relative rounding) through 2 layers and the projection: 3.5e-4
    // measured; a wrong layout or type would be off by ~1.
    assert.ok(rel > 0 && rel <= 3e-3, `relative error ${rel}`);
  } finally {
    native.disposeVisionModel(half);
  }
});

test('the text GGUF is the decoder: its logits equal transformers’ Idefics3 text model', async () => {
  const model = await native.loadModel(textGguf);
  const tmp = mkdtempSync(join(tmpdir(), 'prism-vlm-gguf-'));
  try {
    const info = native.modelInfo(model);
    assert.equal(info.vocabSize, 49280);
    // The GGUF's vocabulary tokenizes as the folder's tokenizer.json, SmolVLM's added tokens whole.
    const fromGguf = await loadTokenizer(textGguf);
    const fromFolder = await loadTokenizer(dir);
    const text =
      'User:<fake_token_around_image><row_1_col_2><image><image> What is this?<end_of_utterance>\nAssistant:';
    const ids = fromGguf.encode(text, { addSpecialTokens: false });
    assert.deepEqual(ids, fromFolder.encode(text, { addSpecialTokens: false }));
    assert.deepEqual(ids.slice(2, 6), [49189, 49154, 49190, 49190]);
    assert.ok(fromGguf.eosTokenIds.includes(49279), 'eos is <end_of_utterance>');
    writeFileSync(join(tmp, 'ids.json'), JSON.stringify(ids));
    execFileSync(
      pythonCommand(),
      [
        join(projectRoot(), 'test', 'vision', 'text_reference.py'),
        'logits',
        dir,
        join(tmp, 'ids.json'),
        join(tmp, 'logits.f32'),
      ],
      { env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' } },
    );
    const buf = readFileSync(join(tmp, 'logits.f32'));
    const ref = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    const ctx = native.createContext(model, {
      kvBlocks: 4,
      blockSize: 16,
      maxBatchTokens: 64,
      maxSeqs: 1,
      threads: 2,
    });
    try {
      const r = await native.step(ctx, {
        ...greedySampling(1),
        tokens: Int32Array.from(ids),
        positions: Int32Array.from(ids.keys()),
        seqTokenOffsets: Int32Array.of(0, ids.length),
        blockTableOffsets: Int32Array.of(0, Math.ceil(ids.length / 16)),
        blockTables: Int32Array.from({ length: Math.ceil(ids.length / 16) }, (_, i) => i),
        sample: Uint8Array.of(1),
        returnLogits: 'all',
      });
      assert.ok(r.logits);
      // The bound of test/numerics.test.ts's float fixtures (their F16 KV cache: ~1e-4 measured).
      const rel = relativeError(r.logits, ref);
      assert.ok(rel <= 1e-3, `logits relative error ${rel}`);
      const V = 49280;
      for (let t = 0; t < ids.length; t++)
        assert.equal(
          argmax(r.logits.subarray(t * V, (t + 1) * V)),
          argmax(ref.subarray(t * V, (t + 1) * V)),
          `top-1 at ${t}`,
        );
    } finally {
      native.disposeContext(ctx);
    }
  } finally {
    native.disposeModel(model);
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a wrong pairing is refused naming the file or option', async () => {
  await assert.rejects(
    native.loadVisionModel(dir, { textModel: textGguf }),
    /textModel applies to an mmproj GGUF/,
  );
  await assert.rejects(native.loadVisionModel(textGguf), /general\.architecture 'llama' is not an mmproj/);
  await assert.rejects(
    native.loadVisionModel(mmprojGguf, { textModel: mmprojGguf }),
    /no tokenizer\.ggml\.tokens/,
  );
});

test('a truncated or altered mmproj is refused naming the file, never a crash', async () => {
  const bytes = readFileSync(mmprojGguf);
  const tmp = mkdtempSync(join(tmpdir(), 'prism-mmproj-'));
  try {
    const bad = join(tmp, 'mmproj.gguf');
    const refused = async (data: Uint8Array, rule: RegExp): Promise<void> => {
      writeFileSync(bad, data);
      await assert.rejects(native.loadVisionModel(bad, { threads: 1 }), (e: Error) => {
        assert.ok(e.message.includes(bad), e.message);
        assert.match(e.message, rule);
        return true;
      });
    };
    // Cuts through the header, the metadata, the tensor infos and the data.
    for (let k = 1; k < 24; k++) await refused(bytes.subarray(0, Math.floor((bytes.length * k) / 24)), /./);
    // Another projector type, by one byte of its value: "idefics3" -> "idefics4".
    const at = bytes.indexOf('idefics3');
    assert.ok(at > 0);
    const other = Uint8Array.from(bytes);
    other[at + 7] = '4'.charCodeAt(0);
    await refused(other, /clip\.projector_type 'idefics4' is not a projector Prism reads/);
    assert.equal(native.isVisionModel(bad), false);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
