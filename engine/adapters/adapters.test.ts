/**
 * engine/adapters: the PEFT reader (what it reads, every refusal naming the key or field,
 * corrupt files never escaping as anything but AdapterFormatError) and the spec's name and
 * path rules, each with its own case.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterFormatError, parsePeftConfig, moduleScale } from './peft-config.js';
import { readPeftAdapter, type BaseShape } from './peft-reader.js';
import { baseTensorName, parseLoraKey } from './names.js';
import { checkAdapterName, checkAdapterPath, checkAdapterPathText, checkBaseModelName } from './rules.js';
import { SafetensorsFile } from './safetensors.js';

/** A tiny llama-shaped base: hidden 16, 2 heads of 8, 1 KV head, intermediate 32, 2 layers. */
const BASE: BaseShape = {
  format: 'gguf',
  numLayers: 2,
  hiddenSize: 16,
  intermediateSize: 32,
  numHeads: 2,
  numKvHeads: 1,
  headDim: 8,
};

type Tensor = { dtype: string; shape: number[]; data: Buffer };

function f32(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}

function safetensors(tensors: Record<string, Tensor>): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let off = 0;
  const parts: Buffer[] = [];
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.data.length] };
    parts.push(t.data);
    off += t.data.length;
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...parts]);
}

const key = (layer: number, module: string, part: 'A' | 'B') =>
  `base_model.model.model.layers.${layer}.${module}.lora_${part}.weight`;

function pair(
  layer: number,
  module: string,
  rank: number,
  inF: number,
  outF: number,
  fill = 0.01,
): Record<string, Tensor> {
  return {
    [key(layer, module, 'A')]: {
      dtype: 'F32',
      shape: [rank, inF],
      data: f32(new Array(rank * inF).fill(fill)),
    },
    [key(layer, module, 'B')]: {
      dtype: 'F32',
      shape: [outF, rank],
      data: f32(new Array(outF * rank).fill(fill)),
    },
  };
}

let root: string;
let counter = 0;
function adapterDir(config: Record<string, unknown>, tensors: Record<string, Tensor> | Buffer): string {
  const dir = join(root, `a${counter++}`);
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config), { mode: 0o644 });
  writeFileSync(
    join(dir, 'adapter_model.safetensors'),
    Buffer.isBuffer(tensors) ? tensors : safetensors(tensors),
    {
      mode: 0o644,
    },
  );
  return dir;
}

const CONFIG = { peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj'], bias: 'none' };

before(() => {
  root = mkdtempSync(join(tmpdir(), 'prism-adapters-'));
  chmodSync(root, 0o755);
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('PEFT reader', () => {
  it('reads A/B pairs with per-module ranks and scales (rank_pattern, alpha_pattern, use_rslora)', () => {
    const dir = adapterDir(
      {
        ...CONFIG,
        r: 4,
        lora_alpha: 8,
        rank_pattern: { v_proj: 2 },
        alpha_pattern: { 'layers\\.1\\.self_attn\\.q_proj': 2 },
      },
      {
        ...pair(0, 'self_attn.q_proj', 4, 16, 16),
        ...pair(0, 'self_attn.v_proj', 2, 16, 8),
        ...pair(1, 'self_attn.q_proj', 4, 16, 16),
      },
    );
    const a = readPeftAdapter(dir, BASE);
    assert.equal(a.rank, 4);
    const got = a.layers.map((l) => [l.layer, l.target, l.rank, l.scale]);
    assert.deepEqual(got, [
      [0, 'q', 4, 2],
      [0, 'v', 2, 4],
      [1, 'q', 4, 0.5],
    ]);
    const rs = parsePeftConfig(JSON.stringify({ ...CONFIG, r: 16, lora_alpha: 8, use_rslora: true }), 'x');
    assert.equal(moduleScale(rs, 'model.layers.0.self_attn.q_proj').scale, 2);
  });

  it('reads F16 and BF16 weights exactly', () => {
    const half = Buffer.alloc(4 * 16 * 2);
    for (let i = 0; i < 64; i++) half.writeUInt16LE(0x3c00, i * 2); // 1.0 in F16
    const bf = Buffer.alloc(16 * 4 * 2);
    for (let i = 0; i < 64; i++) bf.writeUInt16LE(0xc040, i * 2); // -3.0 in BF16
    const dir = adapterDir(CONFIG, {
      [key(0, 'self_attn.k_proj', 'A')]: { dtype: 'F16', shape: [4, 16], data: half },
      [key(0, 'self_attn.k_proj', 'B')]: { dtype: 'BF16', shape: [8, 4], data: bf.subarray(0, 64) },
    });
    const l = readPeftAdapter(dir, BASE).layers[0]!;
    assert.ok(l.a.every((v) => v === 1));
    assert.ok(l.b.every((v) => v === -3));
  });

  it('maps HF module names to the base file tensor names', () => {
    assert.equal(baseTensorName('gguf', 3, 'o'), 'blk.3.attn_output.weight');
    assert.equal(baseTensorName('safetensors', 3, 'down'), 'model.layers.3.mlp.down_proj.weight');
    const k = parseLoraKey('base_model.model.model.layers.7.mlp.gate_proj.lora_B.weight');
    assert.deepEqual(k, { module: 'model.layers.7.mlp.gate_proj', layer: 7, target: 'gate', part: 'B' });
  });

  const refuse = (
    name: string,
    config: Record<string, unknown>,
    tensors: Record<string, Tensor> | Buffer,
    re: RegExp,
  ) =>
    it(`refuses ${name}`, () => {
      const dir = adapterDir(config, tensors);
      assert.throws(
        () => readPeftAdapter(dir, BASE),
        (e: unknown) => e instanceof AdapterFormatError && re.test(e.message),
      );
    });
  const okPair = pair(0, 'self_attn.q_proj', 4, 16, 16);
  refuse(
    'embedding adapters',
    CONFIG,
    {
      ...okPair,
      'base_model.model.model.embed_tokens.lora_embedding_A': { dtype: 'F32', shape: [1], data: f32([0]) },
    },
    /embed_tokens\.lora_embedding_A.*embeddings are not supported/,
  );
  refuse(
    'lm_head adapters',
    CONFIG,
    { ...okPair, 'base_model.model.lm_head.lora_A.weight': { dtype: 'F32', shape: [1], data: f32([0]) } },
    /lm_head\.lora_A\.weight.*lm_head are not supported/,
  );
  refuse('DoRA (use_dora)', { ...CONFIG, use_dora: true }, okPair, /use_dora: DoRA/);
  refuse(
    'DoRA magnitude vectors',
    CONFIG,
    {
      ...okPair,
      [`base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector`]: {
        dtype: 'F32',
        shape: [1],
        data: f32([1]),
      },
    },
    /lora_magnitude_vector'?: DoRA/,
  );
  refuse(
    'bias other than none',
    { ...CONFIG, bias: 'lora_only' },
    okPair,
    /bias: "lora_only" is not supported/,
  );
  refuse('lora_bias', { ...CONFIG, lora_bias: true }, okPair, /lora_bias/);
  refuse('modules_to_save', { ...CONFIG, modules_to_save: ['lm_head'] }, okPair, /modules_to_save/);
  refuse('other PEFT types', { ...CONFIG, peft_type: 'IA3' }, okPair, /peft_type: "IA3"/);
  refuse('a bad r', { ...CONFIG, r: 0 }, okPair, /r: must be an integer/);
  refuse(
    'an invalid rank_pattern regex',
    { ...CONFIG, rank_pattern: { '(': 2 } },
    okPair,
    /rank_pattern: key "\(" is not a valid/,
  );
  refuse(
    'a lone lora_A',
    CONFIG,
    { [key(0, 'self_attn.q_proj', 'A')]: okPair[key(0, 'self_attn.q_proj', 'A')]! },
    /has lora_A but no lora_B/,
  );
  refuse(
    'a rank that disagrees with r',
    { ...CONFIG, r: 8 },
    okPair,
    /lora_A\.weight: shape \[4, 16\] must be \[rank 8, in 16\] to adapt blk\.0\.attn_q\.weight/,
  );
  refuse(
    'a shape that does not fit the base',
    CONFIG,
    pair(0, 'mlp.down_proj', 4, 16, 16),
    /must be \[rank 4, in 32\]/,
  );
  refuse(
    'a layer the base does not have',
    CONFIG,
    pair(5, 'self_attn.q_proj', 4, 16, 16),
    /layer 5 does not exist/,
  );
  refuse('non-finite values', CONFIG, pair(0, 'self_attn.q_proj', 4, 16, 16, NaN), /element 0 is not finite/);
  refuse(
    'other keys',
    CONFIG,
    { ...okPair, 'base_model.model.model.norm.weight': { dtype: 'F32', shape: [1], data: f32([1]) } },
    /is not a LoRA A\/B weight/,
  );
  refuse(
    'unsupported dtypes',
    CONFIG,
    { [key(0, 'self_attn.q_proj', 'A')]: { dtype: 'I8', shape: [4, 16], data: Buffer.alloc(64) } },
    /dtype "I8" is not supported/,
  );
  refuse('an empty adapter', CONFIG, {}, /holds no LoRA weights/);

  it('reports a missing file as "No adapter found"', () => {
    const dir = adapterDir(CONFIG, okPair);
    rmSync(join(dir, 'adapter_model.safetensors'));
    assert.throws(
      () => readPeftAdapter(dir, BASE),
      /No adapter found for .*missing .*adapter_model\.safetensors/,
    );
  });

  it('survives corrupt files: every truncation and byte flip is an AdapterFormatError', () => {
    const good = safetensors({ ...okPair, ...pair(1, 'self_attn.v_proj', 4, 16, 8) });
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const variants: Buffer[] = [];
    for (let cut = 0; cut < good.length; cut += 7) variants.push(good.subarray(0, cut));
    for (let i = 0; i < 300; i++) {
      const b = Buffer.from(good);
      const n = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < n; k++)
        b[Math.floor(rand() * Math.min(b.length, 8 + 600))] = Math.floor(rand() * 256);
      variants.push(b);
    }
    const big = Buffer.from(good);
    big.writeBigUInt64LE(0xffffffffffffffffn, 0);
    variants.push(big);
    let refused = 0;
    for (const v of variants) {
      try {
        SafetensorsFile.fromBytes('fuzz', v);
        const dir = adapterDir(CONFIG, v);
        readPeftAdapter(dir, BASE);
      } catch (e) {
        assert.ok(
          e instanceof AdapterFormatError || (e as Error).name === 'SafetensorsError',
          `unexpected ${(e as Error).name}: ${(e as Error).message}`,
        );
        refused++;
      }
    }
    assert.ok(
      refused > variants.length / 2,
      `only ${refused} of ${variants.length} corrupt files were refused`,
    );
  });
});

describe('adapter name and path rules', () => {
  it('name: letters, digits, - and _, not at either end, at most 256', () => {
    assert.equal(checkAdapterName('sql-lora_2'), undefined);
    assert.equal(checkAdapterName('a'.repeat(256)), undefined);
    for (const bad of ['', '-a', 'a-', '_a', 'a_', 'a.b', 'a b', 'a'.repeat(257), 'é']) {
      assert.match(checkAdapterName(bad) ?? '', /must be 1-256 letters/, bad);
    }
    assert.match(checkAdapterName(3) ?? '', /must be a string/);
  });

  it('baseModelName: the model-name pattern, and equal to modelName', () => {
    assert.equal(checkBaseModelName('llama_65b', 'llama_65b'), undefined);
    assert.match(checkBaseModelName('.x', '.x') ?? '', /must be 1-256 letters, digits, '-', '\.' or '_'/);
    assert.match(checkBaseModelName('b'.repeat(257), 'x') ?? '', /must be 1-256/);
    assert.match(
      checkBaseModelName('other', 'llama_65b') ?? '',
      /must equal the served model's modelName 'llama_65b', got 'other'/,
    );
  });

  it('path text: absolute, within PATH_MAX, no NUL, no . or .. or empty components', () => {
    assert.equal(checkAdapterPathText('/srv/adapters/a'), undefined);
    assert.match(checkAdapterPathText('') ?? '', /must not be empty/);
    assert.match(checkAdapterPathText('rel/dir') ?? '', /must be an absolute path/);
    assert.match(checkAdapterPathText('/' + 'a'.repeat(4095)) ?? '', /at most 4095 bytes/);
    assert.match(checkAdapterPathText('/a\0b') ?? '', /NUL/);
    assert.match(checkAdapterPathText('/srv/../etc') ?? '', /'\.\.' component/);
    assert.match(checkAdapterPathText('/srv/./a') ?? '', /'\.' component/);
    assert.match(checkAdapterPathText('/srv//a') ?? '', /'\/\/'/);
    assert.match(checkAdapterPathText('/srv/a/') ?? '', /end with/);
  });

  it('path on disk: a real directory of the running user, not group/other-writable', () => {
    const ok = adapterDir(CONFIG, pair(0, 'self_attn.q_proj', 4, 16, 16));
    assert.equal(checkAdapterPath(ok), undefined);
    assert.match(checkAdapterPath(join(root, 'missing')) ?? '', /^No adapter found for /);

    const link = join(root, 'link');
    symlinkSync(ok, link);
    assert.match(checkAdapterPath(link) ?? '', /a component of the path is a symbolic link/);
    const parentLink = join(root, 'parent-link');
    symlinkSync(root, parentLink);
    assert.match(checkAdapterPath(join(parentLink, ok.split('/').pop()!)) ?? '', /symbolic link/);

    const file = join(ok, 'adapter_config.json');
    assert.match(checkAdapterPath(file) ?? '', /must be a directory/);

    const gw = adapterDir(CONFIG, {});
    chmodSync(gw, 0o775);
    assert.match(checkAdapterPath(gw) ?? '', /the directory is writable by group \(mode 775\)/);
    const ow = adapterDir(CONFIG, {});
    chmodSync(join(ow, 'adapter_model.safetensors'), 0o646);
    assert.match(checkAdapterPath(ow) ?? '', /adapter_model\.safetensors is writable by others/);

    const lf = adapterDir(CONFIG, {});
    rmSync(join(lf, 'adapter_config.json'));
    symlinkSync(file, join(lf, 'adapter_config.json'));
    assert.match(checkAdapterPath(lf) ?? '', /adapter_config\.json is a symbolic link/);
    const miss = adapterDir(CONFIG, {});
    rmSync(join(miss, 'adapter_config.json'));
    assert.match(checkAdapterPath(miss) ?? '', /No adapter found for .*: missing adapter_config\.json/);
  });

  it('path on disk: owned by the running uid and gid', (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('changing ownership needs root');
      return;
    }
    const u = adapterDir(CONFIG, {});
    chownSync(u, 12345, process.getgid!());
    assert.match(
      checkAdapterPath(u) ?? '',
      /the directory is owned by uid 12345, not by the running user \(uid 0\)/,
    );
    const g = adapterDir(CONFIG, {});
    chownSync(join(g, 'adapter_model.safetensors'), 0, 12345);
    assert.match(checkAdapterPath(g) ?? '', /adapter_model\.safetensors has group gid 12345/);
  });

  it('a generated PEFT adapter passes the path check', () => {
    // sanity: files written with the usual umask pass (0644 / 0755)
    const dir = adapterDir(CONFIG, pair(0, 'self_attn.q_proj', 4, 16, 16));
    assert.equal(readFileSync(join(dir, 'adapter_config.json'), 'utf8'), JSON.stringify(CONFIG));
    assert.equal(checkAdapterPath(dir), undefined);
  });
});
