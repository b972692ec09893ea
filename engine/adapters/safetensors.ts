/**
 * A bounds-checked reader of one safetensors file (the adapter_model.safetensors of a PEFT
 * adapter). Every offset, length and shape in the header is checked against the file's
 * real size before a byte is read, so a truncated or hostile file is refused with a
 * message naming the tensor and the rule — it never reads out of range or allocates what
 * the header merely claims.
 *
 * Layout: u64 little-endian header length N, N bytes of JSON
 * `{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__"?: {...}}`, then the
 * data region; offsets are relative to the data region.
 */
import { readFileSync } from 'node:fs';
import { endianness } from 'node:os';

// The fast paths below view bytes as host-order arrays; safetensors is little-endian.
if (endianness() !== 'LE') throw new Error('engine/adapters/safetensors.ts assumes a little-endian host');

type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** Byte range inside the file (absolute). */
  readonly begin: number;
  readonly end: number;
}

export class SafetensorsError extends Error {
  override readonly name = 'SafetensorsError';
}

const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };
/** A header larger than this is not an adapter header (PEFT writes a few KB). */
const MAX_HEADER_BYTES = 64 * 1024 * 1024;

export class SafetensorsFile {
  readonly tensors = new Map<string, SafetensorsTensor>();

  private constructor(
    readonly path: string,
    private readonly bytes: Buffer,
  ) {}

  /** Reads and checks the whole file; throws SafetensorsError naming the problem. */
  static read(path: string): SafetensorsFile {
    return SafetensorsFile.fromBytes(path, readFileSync(path));
  }

  static fromBytes(path: string, bytes: Buffer): SafetensorsFile {
    const fail = (why: string): never => {
      throw new SafetensorsError(`${path}: ${why}`);
    };
    if (bytes.length < 8) fail(`file of ${bytes.length} bytes is too short for the 8-byte header length`);
    const headerLen = bytes.readBigUInt64LE(0);
    if (headerLen > BigInt(Math.min(MAX_HEADER_BYTES, bytes.length - 8))) {
      fail(`header length ${headerLen} exceeds the file (${bytes.length} bytes) or the 64 MiB header limit`);
    }
    const dataStart = 8 + Number(headerLen);
    let header: unknown;
    try {
      header = JSON.parse(bytes.subarray(8, dataStart).toString('utf8'));
    } catch (err) {
      fail(`header is not valid JSON (${(err as Error).message})`);
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) {
      fail('header must be a JSON object');
    }
    const file = new SafetensorsFile(path, bytes);
    const dataLen = bytes.length - dataStart;
    for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
      if (name === '__metadata__') continue;
      const t = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      const where = `tensor '${name}'`;
      if (typeof t !== 'object' || t === null) fail(`${where}: entry must be an object`);
      if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16') {
        fail(`${where}: dtype ${JSON.stringify(t.dtype)} is not supported (F32, F16 or BF16)`);
      }
      const dtype = t.dtype as SafetensorsDtype;
      if (
        !Array.isArray(t.shape) ||
        t.shape.length > 8 ||
        !t.shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)
      ) {
        fail(`${where}: shape must be an array of at most 8 non-negative integers`);
      }
      const shape = t.shape as number[];
      const off = t.data_offsets;
      if (
        !Array.isArray(off) ||
        off.length !== 2 ||
        !off.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)
      ) {
        fail(`${where}: data_offsets must be [begin, end] non-negative integers`);
      }
      const [b, e] = off as [number, number];
      if (b > e || e > dataLen) {
        fail(`${where}: data_offsets [${b}, ${e}] fall outside the data region of ${dataLen} bytes`);
      }
      let elements = 1;
      for (const d of shape) elements *= d;
      if (!Number.isSafeInteger(elements) || elements * DTYPE_BYTES[dtype] !== e - b) {
        fail(`${where}: ${e - b} bytes do not hold shape [${shape.join(', ')}] of ${dtype}`);
      }
      file.tensors.set(name, { name, dtype, shape, begin: dataStart + b, end: dataStart + e });
    }
    return file;
  }

  /**
   * The tensor's values as float32 (F16/BF16 widened exactly). The bytes are copied into
   * aligned little-endian arrays first (the data region may start at any offset), and F16
   * goes through a 64 Ki-entry table: a rank-64 adapter of a 30-layer model is ~20 M values.
   */
  float32(t: SafetensorsTensor): Float32Array {
    const n = (t.end - t.begin) / DTYPE_BYTES[t.dtype];
    const out = new Float32Array(n);
    const src = this.bytes.subarray(t.begin, t.end);
    if (t.dtype === 'F32') {
      new Uint8Array(out.buffer).set(src);
      return out;
    }
    const half = new Uint16Array(n);
    new Uint8Array(half.buffer).set(src);
    if (t.dtype === 'BF16') {
      const u32 = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u32[i] = half[i]! << 16;
    } else {
      const table = f16Table();
      for (let i = 0; i < n; i++) out[i] = table[half[i]!]!;
    }
    return out;
  }
}

let F16_TABLE: Float32Array | undefined;
function f16Table(): Float32Array {
  if (!F16_TABLE) {
    F16_TABLE = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) F16_TABLE[h] = halfToFloat(h);
  }
  return F16_TABLE;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}
