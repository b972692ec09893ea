/** The binary tensor codec: every KServe v2 datatype round-trips, and sizes are checked. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeTensor, encodeTensor, type TensorValue } from './binary.js';

const samples: Record<string, TensorValue[]> = {
  BOOL: [true, false, true],
  UINT8: [0, 7, 255],
  UINT16: [0, 513, 65535],
  UINT32: [0, 49152, 4294967295],
  UINT64: [0, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER],
  INT8: [-128, 0, 127],
  INT16: [-32768, -2, 32767],
  INT32: [-2147483648, -1, 2147483647],
  INT64: [Number.MIN_SAFE_INTEGER, -5, 2 ** 45],
  FP16: [0, -1.5, 65504, 2 ** -14],
  BF16: [0, -2, 1.5, 3.140625],
  FP32: [0, -1.25, 3.4028234663852886e38],
  FP64: [0, -1e-300, Math.PI],
  BYTES: ['', 'hello', 'héllo ✓'],
};

const ELEMENT = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  BF16: 2,
  FP32: 4,
  FP64: 8,
};

test('every datatype round-trips through its little-endian bytes', () => {
  for (const [datatype, values] of Object.entries(samples)) {
    const bytes = encodeTensor(values, datatype);
    if (datatype !== 'BYTES')
      assert.equal(bytes.length, values.length * ELEMENT[datatype as keyof typeof ELEMENT], datatype);
    assert.deepEqual(decodeTensor(bytes, datatype, values.length, 'inputs[0]'), values, datatype);
  }
  // The byte layout itself: UINT32 little-endian, BYTES length-prefixed.
  assert.deepEqual([...encodeTensor([1, 256], 'UINT32')], [1, 0, 0, 0, 0, 1, 0, 0]);
  assert.deepEqual([...encodeTensor(['ab'], 'BYTES')], [2, 0, 0, 0, 97, 98]);
});

test('FP16 rounds to nearest and carries into the exponent', () => {
  const roundTrip = (x: number) => decodeTensor(encodeTensor([x], 'FP16'), 'FP16', 1, 'x')[0];
  assert.equal(roundTrip(1 + 2 ** -11 + 2 ** -12), 1 + 2 ** -10);
  assert.equal(roundTrip(2 - 2 ** -12), 2);
  assert.equal(roundTrip(1e6), Infinity);
  assert.equal(roundTrip(2 ** -24), 2 ** -24);
});

test('sizes and element counts are checked, naming the field', () => {
  assert.throws(
    () => decodeTensor(Buffer.alloc(7), 'UINT32', 2, 'inputs[0]'),
    /inputs\[0\]\.parameters\.binary_data_size: must be 8/,
  );
  assert.throws(
    () => decodeTensor(Buffer.from([5, 0, 0, 0, 97]), 'BYTES', 1, 'inputs[1]'),
    /inputs\[1\]: BYTES element runs past/,
  );
  assert.throws(
    () => decodeTensor(Buffer.from([1, 0]), 'BYTES', 1, 'inputs[0]'),
    /ends inside an element length/,
  );
  assert.throws(
    () => decodeTensor(encodeTensor(['a', 'b'], 'BYTES'), 'BYTES', 3, 'inputs[0]'),
    /holds 2 elements, the shape 3/,
  );
  assert.throws(
    () => decodeTensor(Buffer.alloc(4), 'COMPLEX', 1, 'inputs[0]'),
    /inputs\[0\]\.datatype: unknown datatype/,
  );
  const big = Buffer.alloc(8);
  big.writeBigUInt64LE(2n ** 63n);
  assert.throws(() => decodeTensor(big, 'UINT64', 1, 'inputs[0]'), /inputs\[0\]\.data\[0\]/);
});
