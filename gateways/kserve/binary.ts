/**
 * Triton's binary tensor data extension to KServe v2 (what `tritonclient` sends by default):
 * the body is a JSON header of `Inference-Header-Content-Length` bytes followed by the raw
 * bytes of every input whose `parameters.binary_data_size` is set, in input order; outputs
 * asked with `parameters.binary_data: true` (or all of them, with the request's
 * `parameters.binary_data_output: true`) come back the same way. Data is little-endian, row
 * major, elements packed; BOOL is one byte; BYTES is each element's 4-byte length then its bytes.
 *
 * Decoding turns the binary inputs into ordinary JSON `data`, so the route validates and
 * serves one form; every size is checked against the body before a byte is read.
 */
import type { Context } from 'koa';
import { parseJsonText, readRawBody, readJsonBody, utf8Text } from '../shared/body.js';
import { invalid } from '../shared/http-error.js';

const HEADER_LENGTH = 'inference-header-content-length';

/** Element size in bytes of each KServe v2 datatype (BYTES: variable). */
const ELEMENT_BYTES: Readonly<Record<string, number>> = {
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
  BYTES: 0,
};

export type TensorValue = number | boolean | string;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function elementCount(shape: unknown, field: string): number {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0))
    throw invalid(field, 'must be a list of non-negative integers');
  const n = (shape as number[]).reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(n)) throw invalid(field, 'holds too many elements');
  return n;
}

function f16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function toF16(value: number): number {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  const frac = bits & 0x7fffff;
  if (((bits >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (frac ? 0x200 : 0);
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    const m = (frac | 0x800000) >> (1 - exp);
    return sign | ((m + 0x1000) >> 13);
  }
  // A rounding carry out of the fraction moves into the exponent, as it should.
  return sign | ((exp << 10) + ((frac + 0x1000) >> 13));
}

/** The elements of one binary tensor; `field` names the input in errors. */
export function decodeTensor(bytes: Buffer, datatype: string, count: number, field: string): TensorValue[] {
  const size = ELEMENT_BYTES[datatype];
  if (size === undefined) throw invalid(`${field}.datatype`, `unknown datatype ${JSON.stringify(datatype)}`);
  const out: TensorValue[] = [];
  if (datatype === 'BYTES') {
    let at = 0;
    while (at < bytes.length) {
      if (at + 4 > bytes.length) throw invalid(field, 'BYTES data ends inside an element length');
      const len = bytes.readUInt32LE(at);
      at += 4;
      if (at + len > bytes.length) throw invalid(field, 'BYTES element runs past its binary_data_size');
      out.push(utf8Text(bytes.subarray(at, at + len)));
      at += len;
    }
    if (out.length !== count)
      throw invalid(field, `BYTES data holds ${out.length} elements, the shape ${count}`);
    return out;
  }
  if (bytes.length !== count * size)
    throw invalid(
      `${field}.parameters.binary_data_size`,
      `must be ${count * size} (${count} ${datatype} elements), got ${bytes.length}`,
    );
  for (let i = 0, at = 0; i < count; i++, at += size) {
    switch (datatype) {
      case 'BOOL':
        out.push(bytes[at] !== 0);
        break;
      case 'UINT8':
        out.push(bytes.readUInt8(at));
        break;
      case 'UINT16':
        out.push(bytes.readUInt16LE(at));
        break;
      case 'UINT32':
        out.push(bytes.readUInt32LE(at));
        break;
      case 'INT8':
        out.push(bytes.readInt8(at));
        break;
      case 'INT16':
        out.push(bytes.readInt16LE(at));
        break;
      case 'INT32':
        out.push(bytes.readInt32LE(at));
        break;
      case 'UINT64':
      case 'INT64': {
        const v = datatype === 'UINT64' ? bytes.readBigUInt64LE(at) : bytes.readBigInt64LE(at);
        if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER))
          throw invalid(`${field}.data[${i}]`, `${v} is beyond the integers this server reads exactly`);
        out.push(Number(v));
        break;
      }
      case 'FP16':
        out.push(f16(bytes.readUInt16LE(at)));
        break;
      case 'BF16':
        out.push(new Float32Array(new Uint32Array([bytes.readUInt16LE(at) << 16]).buffer)[0]);
        break;
      case 'FP32':
        out.push(bytes.readFloatLE(at));
        break;
      default:
        out.push(bytes.readDoubleLE(at));
    }
  }
  return out;
}

/** The bytes of one tensor's elements. */
export function encodeTensor(data: readonly TensorValue[], datatype: string): Buffer {
  const size = ELEMENT_BYTES[datatype];
  if (size === undefined) throw new Error(`unknown datatype ${datatype}`);
  if (datatype === 'BYTES') {
    return Buffer.concat(
      data.flatMap((v) => {
        const b = Buffer.from(String(v), 'utf-8');
        const len = Buffer.alloc(4);
        len.writeUInt32LE(b.length);
        return [len, b];
      }),
    );
  }
  const out = Buffer.alloc(data.length * size);
  data.forEach((v, i) => {
    const at = i * size;
    const n = Number(v);
    switch (datatype) {
      case 'BOOL':
        out[at] = v ? 1 : 0;
        break;
      case 'UINT8':
        out.writeUInt8(n, at);
        break;
      case 'UINT16':
        out.writeUInt16LE(n, at);
        break;
      case 'UINT32':
        out.writeUInt32LE(n, at);
        break;
      case 'INT8':
        out.writeInt8(n, at);
        break;
      case 'INT16':
        out.writeInt16LE(n, at);
        break;
      case 'INT32':
        out.writeInt32LE(n, at);
        break;
      case 'UINT64':
        out.writeBigUInt64LE(BigInt(n), at);
        break;
      case 'INT64':
        out.writeBigInt64LE(BigInt(n), at);
        break;
      case 'FP16':
        out.writeUInt16LE(toF16(n), at);
        break;
      case 'BF16':
        out.writeUInt16LE(new Uint32Array(new Float32Array([n]).buffer)[0] >>> 16, at);
        break;
      case 'FP32':
        out.writeFloatLE(n, at);
        break;
      default:
        out.writeDoubleLE(n, at);
    }
  });
  return out;
}

/**
 * An inference request body: plain JSON, or the binary form when the request carries
 * `Inference-Header-Content-Length`. Binary inputs come back with their `data` filled in and
 * `binary_data_size` removed.
 */
export async function readInferBody(ctx: Context, limitBytes: number): Promise<unknown> {
  const header = ctx.get(HEADER_LENGTH);
  if (header === '') return readJsonBody(ctx, limitBytes);
  const raw = await readRawBody(ctx, limitBytes);
  if (!/^\d+$/.test(header) || Number(header) > raw.length)
    throw invalid(
      'Inference-Header-Content-Length',
      `must be the JSON header's length in bytes (at most the body's ${raw.length})`,
    );
  const headerLength = Number(header);
  const body = parseJsonText(ctx, utf8Text(raw.subarray(0, headerLength)), 'inference header');
  let at = headerLength;
  const inputs = isObject(body) && Array.isArray(body.inputs) ? body.inputs : [];
  inputs.forEach((input: unknown, i) => {
    const field = `inputs[${i}]`;
    if (!isObject(input) || !isObject(input.parameters) || input.parameters.binary_data_size === undefined)
      return;
    const { binary_data_size: size, ...parameters } = input.parameters;
    if (!Number.isSafeInteger(size) || (size as number) < 0)
      throw invalid(`${field}.parameters.binary_data_size`, 'must be a non-negative integer');
    if (input.data !== undefined)
      throw invalid(`${field}.data`, 'must be absent when binary_data_size is set');
    if (at + (size as number) > raw.length)
      throw invalid(`${field}.parameters.binary_data_size`, 'runs past the end of the body');
    const count = elementCount(input.shape, `${field}.shape`);
    input.data = decodeTensor(raw.subarray(at, at + (size as number)), String(input.datatype), count, field);
    input.parameters = parameters;
    at += size as number;
  });
  if (at !== raw.length)
    throw invalid('request body', `${raw.length - at} bytes after the binary inputs belong to no input`);
  return body;
}

export interface OutputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data: readonly TensorValue[];
}

/** Which outputs a request wants as binary data. */
export function binaryOutputs(body: {
  outputs?: readonly { name: string; parameters?: { binary_data?: unknown } | null }[];
  parameters?: { binary_data_output?: unknown } | null;
}): (name: string) => boolean {
  const all = body.parameters?.binary_data_output === true;
  return (name) => {
    const asked = body.outputs?.find((o) => o.name === name)?.parameters?.binary_data;
    return asked === undefined || asked === null ? all : asked === true;
  };
}

/** Answers an inference: JSON, or the JSON header and the binary outputs after it. */
export function sendInferReply(
  ctx: Context,
  head: Record<string, unknown>,
  outputs: readonly OutputTensor[],
  binary: (name: string) => boolean,
): void {
  const parts: Buffer[] = [];
  const described = outputs.map((o) => {
    if (!binary(o.name)) return { name: o.name, shape: o.shape, datatype: o.datatype, data: o.data };
    const bytes = encodeTensor(o.data, o.datatype);
    parts.push(bytes);
    return {
      name: o.name,
      shape: o.shape,
      datatype: o.datatype,
      parameters: { binary_data_size: bytes.length },
    };
  });
  const json = { ...head, outputs: described };
  if (parts.length === 0) {
    ctx.body = json;
    return;
  }
  const header = Buffer.from(JSON.stringify(json), 'utf-8');
  ctx.set('Inference-Header-Content-Length', String(header.length));
  ctx.type = 'application/octet-stream';
  ctx.body = Buffer.concat([header, ...parts]);
}
