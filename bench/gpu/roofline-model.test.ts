/**
 * The decode-step model of bench/gpu/roofline-model.ts: its launch counts are the context's
 * (5 per layer + 3 for the fast set, as native/cuda/device.test.ts counts them), its bytes
 * are the weights' plus what the step moves besides, and its predictions move the way the
 * arithmetic says they must.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeStep, SHAPES, storageOf } from './roofline-model.js';

const H200 = { readGBs: 4300, launchUs: 2 };

test('launches: the fast set is 5 per layer + 3, the legacy set 10 per layer + 3', () => {
  for (const shape of Object.values(SHAPES)) {
    assert.equal(decodeStep(shape, 'bf16', 'fast', H200, 160).launches, 5 * shape.layers + 3);
    assert.equal(decodeStep(shape, 'bf16', 'legacy', H200, 160).launches, 10 * shape.layers + 3);
  }
  // A Q4_K_M layer whose V is Q6_K runs its QKV as two parts: one launch more.
  const s = SHAPES['8b']!;
  const mixed = Array.from(
    { length: s.layers },
    (_, l) => storageOf('q4_k', 'v', l, s.layers) === 'Q6_K',
  ).filter(Boolean).length;
  assert.ok(mixed > 0);
  assert.equal(decodeStep(s, 'q4_k', 'fast', H200, 160).launches, 5 * s.layers + 3 + mixed);
});

test('bytes: every weight once (BF16 2 bytes a weight), plus the step’s K/V and activations', () => {
  const s = SHAPES['1b']!;
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  const weights =
    s.layers * (s.hidden * (q + 2 * kv) + q * s.hidden + 3 * s.hidden * s.intermediate) + s.vocab * s.hidden;
  const m = decodeStep(s, 'bf16', 'fast', H200, 160);
  assert.equal(m.weightBytes, 2 * weights);
  assert.ok(m.bytes > m.weightBytes);
  // The K/V read grows with the context: 2 (K, V) × kv × 2 bytes per position per layer.
  const longer = decodeStep(s, 'bf16', 'fast', H200, 1160);
  assert.ok(Math.abs(longer.bytes - m.bytes - 1000 * s.layers * 2 * kv * 2) < 1);
});

test('predictions: fewer launches and fewer bytes are faster; the share rises with the model', () => {
  for (const type of ['bf16', 'q8_0', 'q4_k'] as const) {
    const shares = ['1b', '3b', '8b'].map(
      (k) => decodeStep(SHAPES[k]!, type, 'fast', H200, 160).shareOfRoofline,
    );
    assert.ok(shares[0]! < shares[1]! && shares[1]! < shares[2]!, `${type}: ${shares.join(', ')}`);
    for (const k of ['1b', '8b']) {
      const fast = decodeStep(SHAPES[k]!, type, 'fast', H200, 160);
      const legacy = decodeStep(SHAPES[k]!, type, 'legacy', H200, 160);
      assert.ok(fast.tokS > legacy.tokS && fast.shareOfRoofline <= 1);
    }
  }
  const s = SHAPES['8b']!;
  const bf16 = decodeStep(s, 'bf16', 'fast', H200, 160);
  const q4 = decodeStep(s, 'q4_k', 'fast', H200, 160);
  assert.ok(q4.weightBytes < 0.35 * bf16.weightBytes && q4.tokS > 2 * bf16.tokS);
  // With no launch cost the step is its bytes over the read rate.
  const pure = decodeStep(s, 'bf16', 'fast', { readGBs: 4300, launchUs: 0 }, 160);
  assert.ok(Math.abs(pure.stepUs - (pure.bytes / 4300e9) * 1e6) < 1e-6);
  assert.throws(() => decodeStep(s, 'bf16', 'fast', H200, 160, 9), /sequences/);
});
