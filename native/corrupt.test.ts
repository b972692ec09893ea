/**
 * Corrupted model files never crash the process: truncations at many offsets, bit flips,
 * overwritten counts and type ids, wrong magic, broken Hugging Face directories. Every
 * failure is a ModelFormatError naming the file (and the tensor when there is one).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  readGgufMetadata,
  step,
  type StepPlan,
} from './native.js';
import { ModelFormatError } from './errors.js';
import { TINY, writeTinyGguf, writeTinyHfDir } from './test-model-files.js';

const dir = mkdtempSync(join(tmpdir(), 'prism-corrupt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const original = join(dir, 'tiny.gguf');
const layout = writeTinyGguf(original);

function plan(): StepPlan {
  return {
    tokens: Int32Array.from([1, 2, 3]),
    positions: Int32Array.from([0, 1, 2]),
    seqTokenOffsets: Int32Array.from([0, 3]),
    blockTableOffsets: Int32Array.from([0, 1]),
    blockTables: Int32Array.from([0]),
    sample: Uint8Array.from([1]),
    temperature: Float32Array.from([0.8]),
    topK: Int32Array.from([0]),
    topP: Float32Array.from([0.9]),
    repetitionPenalty: Float32Array.from([1]),
    presencePenalty: Float32Array.from([0]),
    frequencyPenalty: Float32Array.from([0]),
    penaltyTokenOffsets: Int32Array.from([0, 0]),
    penaltyTokens: new Int32Array(0),
    seeds: BigUint64Array.from([7n]),
    sampleCounters: Int32Array.from([0]),
    allowedMaskRows: Int32Array.from([-1]),
    allowedMask: new Int32Array(0),
    topLogprobs: Int32Array.from([3]),
  };
}

/** Loads `path`; returns 'ok' (after running a step on it) or the ModelFormatError. */
async function tryLoad(path: string): Promise<'ok' | ModelFormatError> {
  try {
    const m = await loadModel(path);
    const ctx = createContext(m, { kvBlocks: 1, blockSize: 4, maxBatchTokens: 4, maxSeqs: 1, threads: 1 });
    await step(ctx, plan());
    disposeContext(ctx);
    disposeModel(m);
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof ModelFormatError, `expected a ModelFormatError, got ${String(err)}`);
    assert.equal(err.file.startsWith(dir), true, `error names the file: ${err.file}`);
    assert.ok(err.message.includes(err.file), 'message names the file');
    assert.ok(err.reason.length > 0);
    return err;
  }
}

async function expectError(path: string, reason: RegExp, tensor?: string): Promise<ModelFormatError> {
  const r = await tryLoad(path);
  assert.notEqual(r, 'ok', `${path} should not load`);
  const err = r as ModelFormatError;
  assert.match(err.reason, reason);
  if (tensor !== undefined) assert.equal(err.tensor, tensor);
  return err;
}

function variant(name: string, edit: (b: Buffer) => Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, edit(Buffer.from(layout.bytes)));
  return path;
}

describe('corrupted GGUF files', () => {
  it('the untouched tiny file loads (control)', async () => {
    assert.equal(await tryLoad(original), 'ok');
  });

  it('truncation anywhere gives an error naming the file', async () => {
    const size = layout.bytes.length;
    const offsets = new Set<number>();
    for (let i = 0; i < 64; i++) offsets.add(i);
    for (let i = 64; i < layout.dataStart; i += 7) offsets.add(i);
    for (let i = layout.dataStart; i < size; i += Math.ceil((size - layout.dataStart) / 25)) offsets.add(i);
    offsets.add(size - 1);
    let k = 0;
    for (const cut of offsets) {
      const path = join(dir, `trunc-${k++}.gguf`);
      writeFileSync(path, layout.bytes.subarray(0, cut));
      const err = await tryLoad(path);
      assert.notEqual(err, 'ok', `truncated at ${cut} of ${size} must not load`);
      if (cut >= layout.dataStart)
        assert.ok((err as ModelFormatError).tensor, `data truncation at ${cut} names a tensor`);
      if (cut < layout.tensorInfoStart) {
        assert.throws(
          () => readGgufMetadata(path),
          (e: unknown) => e instanceof ModelFormatError && e.file === path,
        );
      }
      rmSync(path);
    }
  });

  it('bit flips in the header, metadata and tensor infos never crash', async () => {
    let s = 12345;
    const rand = () => {
      s = (s * 1103515245 + 12345) % 2147483648;
      return s / 2147483648;
    };
    let failures = 0;
    for (let k = 0; k < 300; k++) {
      const at = Math.floor(rand() * layout.dataStart);
      const bit = Math.floor(rand() * 8);
      const path = variant(`flip-${k}.gguf`, (b) => {
        b[at]! ^= 1 << bit;
        return b;
      });
      if ((await tryLoad(path)) !== 'ok') failures++;
      rmSync(path);
    }
    assert.ok(failures > 30, `most header flips are detected (${failures}/300)`);
  });

  it('bit flips in tensor data load or fail cleanly', async () => {
    for (let k = 0; k < 20; k++) {
      const at = layout.dataStart + Math.floor(((layout.bytes.length - layout.dataStart) * k) / 20);
      const path = variant(`dflip-${k}.gguf`, (b) => {
        b[at] = 0xff;
        b[at + 1] = 0x7f; // f16 NaN in a block scale
        return b;
      });
      await tryLoad(path);
      rmSync(path);
    }
  });

  it('wrong magic and unsupported version', async () => {
    await expectError(
      variant('magic.gguf', (b) => (b.write('GGML', 0), b)),
      /not a GGUF file/,
    );
    await expectError(
      variant('v1.gguf', (b) => (b.writeUInt32LE(1, 4), b)),
      /unsupported GGUF version 1/,
    );
  });

  it('absurd tensor and metadata counts', async () => {
    await expectError(
      variant('tcount.gguf', (b) => (b.writeBigUInt64LE(1n << 40n, 8), b)),
      /tensor count/,
    );
    await expectError(
      variant('kvcount.gguf', (b) => (b.writeBigUInt64LE(1n << 60n, 16), b)),
      /metadata count/,
    );
    // First key's string length.
    await expectError(
      variant('keylen.gguf', (b) => (b.writeBigUInt64LE(1n << 50n, layout.kvStart), b)),
      /string length/,
    );
  });

  it('unknown and unsupported tensor types name the tensor', async () => {
    const at = layout.typeFieldOffset['blk.0.attn_q.weight']!;
    await expectError(
      variant('type99.gguf', (b) => (b.writeUInt32LE(99, at), b)),
      /unknown or unsupported tensor type/,
      'blk.0.attn_q.weight',
    );
    await expectError(
      variant('q5k.gguf', (b) => (b.writeUInt32LE(13, at), b)),
      /Q5_K/,
      'blk.0.attn_q.weight',
    );
  });

  it('dims that do not match the architecture name the tensor', async () => {
    const at = layout.typeFieldOffset['blk.1.ffn_gate.weight']!;
    await expectError(
      variant('dims.gguf', (b) => (b.writeBigUInt64LE(BigInt(TINY.inter / 2), at - 8), b)),
      /does not match/,
      'blk.1.ffn_gate.weight',
    );
  });

  it('a tensor offset past the end or overlapping another', async () => {
    const at = layout.typeFieldOffset['blk.0.ffn_up.weight']! + 4;
    await expectError(
      variant('offset.gguf', (b) => (b.writeBigUInt64LE(1n << 40n, at), b)),
      /past the end/,
      'blk.0.ffn_up.weight',
    );
    await expectError(
      variant('overlap.gguf', (b) => (b.writeBigUInt64LE(0n, at), b)),
      /overlaps/,
    );
  });

  it('an unknown architecture and a missing file', async () => {
    const path = join(dir, 'gpt2.gguf');
    writeTinyGguf(path, TINY, { arch: 'gpt2' });
    await expectError(path, /unsupported architecture 'gpt2'/);
    await expectError(join(dir, 'nope.gguf'), /cannot open/);
  });
});

describe('broken Hugging Face directories', () => {
  const fresh = (name: string, arch: 'llama' | 'qwen2' | 'qwen3' = 'qwen3') => {
    const d = join(dir, name);
    writeTinyHfDir(d, arch);
    return d;
  };

  it('a valid directory loads (control)', async () => {
    assert.equal(await tryLoad(fresh('hf-ok')), 'ok');
  });

  it('config.json that is not JSON, lacks fields or names another architecture', async () => {
    let d = fresh('hf-badjson');
    writeFileSync(join(d, 'config.json'), '{"hidden_size": 32,');
    let err = await expectError(d, /invalid JSON/);
    assert.ok(err.file.endsWith('config.json'));

    d = fresh('hf-nofield');
    const cfg = JSON.parse(readFileSync(join(d, 'config.json'), 'utf8'));
    delete cfg.num_hidden_layers;
    writeFileSync(join(d, 'config.json'), JSON.stringify(cfg));
    await expectError(d, /num_hidden_layers/);

    d = fresh('hf-arch');
    writeFileSync(
      join(d, 'config.json'),
      JSON.stringify({
        ...cfg,
        num_hidden_layers: 2,
        model_type: 'gpt_neox',
        architectures: ['GPTNeoXForCausalLM'],
      }),
    );
    await expectError(d, /unsupported architecture/);

    d = fresh('hf-layers');
    writeFileSync(join(d, 'config.json'), JSON.stringify({ ...cfg, num_hidden_layers: 3 }));
    err = await expectError(d, /missing tensor/);
    assert.match(err.message, /model\.layers\.2|blk\.2/);
  });

  it('truncated or corrupt safetensors headers and data', async () => {
    const cut = async (name: string, edit: (b: Buffer) => Buffer, reason: RegExp) => {
      const d = fresh(name);
      const file = join(d, 'model.safetensors');
      writeFileSync(file, edit(readFileSync(file)));
      const err = await expectError(d, reason);
      assert.equal(err.file, file);
    };
    await cut('st-short', (b) => b.subarray(0, 5), /no header length/);
    await cut('st-header', (b) => b.subarray(0, 100), /header length/);
    await cut('st-data', (b) => b.subarray(0, b.length - 10), /outside the data section/);
    await cut('st-json', (b) => (b.write('!', 8), b), /invalid header JSON/);
    await cut(
      'st-dtype',
      (b) => {
        const s = b.toString('latin1');
        const i = s.indexOf('"dtype":"F32"');
        b.write('"dtype":"I32"', i, 'latin1');
        return b;
      },
      /unsupported dtype 'I32'/,
    );
    for (let k = 0; k < 40; k++) {
      const d = fresh(`st-flip-${k}`);
      const file = join(d, 'model.safetensors');
      const b = readFileSync(file);
      const at = 8 + ((k * 97) % b.readUInt32LE(0));
      b[at]! ^= 1 << (k % 8);
      writeFileSync(file, b);
      await tryLoad(d);
      rmSync(d, { recursive: true });
    }
  });
});
