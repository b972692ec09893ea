/**
 * Writers for tiny synthetic model files used by the native tests: a GGUF (llama
 * architecture, F32 + quantized tensors) and a Hugging Face safetensors directory. They let
 * the tests corrupt every part of a well-formed file without touching the real model.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kernelTestHooks, type TensorType } from './native.js';

export interface TinyShape {
  vocab: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  inter: number;
  layers: number;
  /** A mixture of experts (Mixtral-style llama): experts per layer and how many a token uses. */
  experts?: number;
  expertsUsed?: number;
}

export const TINY: TinyShape = { vocab: 64, hidden: 32, heads: 4, kvHeads: 2, inter: 64, layers: 2 };

/** Deterministic pseudo-random floats (so files and expectations are reproducible). */
function randomFloats(n: number, seed: number, scale = 0.2): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

const GGML_TYPE: Record<string, number> = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  IQ4_NL: 20,
  IQ4_XS: 23,
  BF16: 30,
};

interface GgufTensorSpec {
  name: string;
  dims: number[]; // innermost first
  type: TensorType;
  values: Float32Array;
}

/** Layout facts of a written GGUF, for tests that corrupt a particular part. */
export interface GgufLayout {
  bytes: Buffer;
  kvStart: number;
  tensorInfoStart: number;
  dataStart: number;
  /** Offset of each tensor info record's type field, by tensor name. */
  typeFieldOffset: Record<string, number>;
}

function tinyLlamaTensors(
  shape: TinyShape = TINY,
  weightType: TensorType = 'Q8_0',
  typeFor: (name: string) => TensorType | undefined = () => undefined,
): GgufTensorSpec[] {
  const { vocab, hidden, heads, kvHeads, inter, layers } = shape;
  const hd = hidden / heads;
  const t: GgufTensorSpec[] = [];
  let seed = 1;
  const add = (name: string, dims: number[], type: TensorType, scale = 0.2) =>
    t.push({
      name,
      dims,
      type: typeFor(name) ?? type,
      values: randomFloats(
        dims.reduce((a, b) => a * b, 1),
        seed++,
        scale,
      ),
    });
  add('token_embd.weight', [hidden, vocab], weightType, 1);
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}.`;
    t.push({
      name: p + 'attn_norm.weight',
      dims: [hidden],
      type: 'F32',
      values: new Float32Array(hidden).fill(1),
    });
    add(p + 'attn_q.weight', [hidden, heads * hd], weightType);
    add(p + 'attn_k.weight', [hidden, kvHeads * hd], weightType);
    add(p + 'attn_v.weight', [hidden, kvHeads * hd], weightType);
    add(p + 'attn_output.weight', [heads * hd, hidden], weightType);
    t.push({
      name: p + 'ffn_norm.weight',
      dims: [hidden],
      type: 'F32',
      values: new Float32Array(hidden).fill(1),
    });
    if (shape.experts) {
      // GGUF's stacked experts: [cols, rows, experts], innermost first; the router stays F32.
      add(p + 'ffn_gate_inp.weight', [hidden, shape.experts], 'F32');
      add(p + 'ffn_gate_exps.weight', [hidden, inter, shape.experts], weightType);
      add(p + 'ffn_up_exps.weight', [hidden, inter, shape.experts], weightType);
      add(p + 'ffn_down_exps.weight', [inter, hidden, shape.experts], weightType);
    } else {
      add(p + 'ffn_gate.weight', [hidden, inter], weightType);
      add(p + 'ffn_up.weight', [hidden, inter], weightType);
      add(p + 'ffn_down.weight', [inter, hidden], weightType);
    }
  }
  t.push({
    name: 'output_norm.weight',
    dims: [hidden],
    type: 'F32',
    values: new Float32Array(hidden).fill(1),
  });
  return t;
}

export function writeTinyGguf(
  path: string,
  shape: TinyShape = TINY,
  opts: {
    arch?: string;
    weightType?: TensorType;
    /** Per-tensor storage type overrides (mixed-type files, like llama.cpp's Q4_K_M). */
    typeFor?: (name: string) => TensorType | undefined;
    extraKv?: Array<[string, number, Buffer]>;
  } = {},
): GgufLayout {
  const arch = opts.arch ?? 'llama';
  const tensors = tinyLlamaTensors(shape, opts.weightType, opts.typeFor);
  const parts: Buffer[] = [];
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  };
  const u64 = (v: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  const f32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    return b;
  };
  const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
  const kvs: Array<[string, number, Buffer]> = [
    ['general.architecture', 8, str(arch)],
    ['general.name', 8, str('tiny test model')],
    ['general.alignment', 4, u32(32)],
    [`${arch}.block_count`, 4, u32(shape.layers)],
    [`${arch}.context_length`, 4, u32(256)],
    [`${arch}.embedding_length`, 4, u32(shape.hidden)],
    [`${arch}.feed_forward_length`, 4, u32(shape.inter)],
    [`${arch}.attention.head_count`, 4, u32(shape.heads)],
    [`${arch}.attention.head_count_kv`, 4, u32(shape.kvHeads)],
    [`${arch}.rope.freq_base`, 6, f32(10000)],
    [`${arch}.attention.layer_norm_rms_epsilon`, 6, f32(1e-5)],
    // An array of strings, like a tokenizer vocabulary.
    ['tokenizer.ggml.tokens', 9, Buffer.concat([u32(8), u64(3), str('a'), str('b'), str('c')])],
    ...(shape.experts
      ? ([
          [`${arch}.expert_count`, 4, u32(shape.experts)],
          [`${arch}.expert_used_count`, 4, u32(shape.expertsUsed ?? 1)],
        ] as Array<[string, number, Buffer]>)
      : []),
    ...(opts.extraKv ?? []),
  ];
  parts.push(Buffer.from('GGUF'), u32(3), u64(tensors.length), u64(kvs.length));
  const kvStart = 24;
  for (const [k, type, value] of kvs) parts.push(str(k), u32(type), value);
  const tensorInfoStart = Buffer.concat(parts).length;
  const datas: Buffer[] = [];
  const typeFieldOffset: Record<string, number> = {};
  let offset = 0;
  let at = tensorInfoStart;
  for (const t of tensors) {
    const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
    const data = Buffer.from(kernelTestHooks.quantize(t.type, t.values, rows, t.dims[0]!));
    const info = Buffer.concat([str(t.name), u32(t.dims.length), ...t.dims.map(u64)]);
    typeFieldOffset[t.name] = at + info.length;
    parts.push(info, u32(GGML_TYPE[t.type]!), u64(offset));
    at += info.length + 12;
    const padded = Math.ceil(data.length / 32) * 32;
    datas.push(Buffer.concat([data, Buffer.alloc(padded - data.length)]));
    offset += padded;
  }
  let head = Buffer.concat(parts);
  const dataStart = Math.ceil(head.length / 32) * 32;
  head = Buffer.concat([head, Buffer.alloc(dataStart - head.length)]);
  const bytes = Buffer.concat([head, ...datas]);
  writeFileSync(path, bytes);
  return { bytes, kvStart, tensorInfoStart, dataStart, typeFieldOffset };
}

/** Writes a Hugging Face style directory (config.json + model.safetensors) of the given architecture. */
export function writeTinyHfDir(
  dir: string,
  arch: 'llama' | 'qwen2' | 'qwen3',
  dtype: 'F32' | 'BF16' | 'F16' = 'F32',
  shape: TinyShape = TINY,
): void {
  mkdirSync(dir, { recursive: true });
  const { vocab, hidden, heads, kvHeads, inter, layers } = shape;
  const hd = hidden / heads;
  const config = {
    architectures: [
      { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' }[arch],
    ],
    model_type: arch,
    hidden_size: hidden,
    num_hidden_layers: layers,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: hd,
    intermediate_size: inter,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 256,
    tie_word_embeddings: arch === 'qwen2',
    vocab_size: vocab,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const tensors: Array<[string, number[]]> = [
    ['model.embed_tokens.weight', [vocab, hidden]],
    ['model.norm.weight', [hidden]],
  ];
  if (arch !== 'qwen2') tensors.push(['lm_head.weight', [vocab, hidden]]);
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    tensors.push(
      [p + 'input_layernorm.weight', [hidden]],
      [p + 'post_attention_layernorm.weight', [hidden]],
      [p + 'self_attn.q_proj.weight', [heads * hd, hidden]],
      [p + 'self_attn.k_proj.weight', [kvHeads * hd, hidden]],
      [p + 'self_attn.v_proj.weight', [kvHeads * hd, hidden]],
      [p + 'self_attn.o_proj.weight', [hidden, heads * hd]],
      [p + 'mlp.gate_proj.weight', [inter, hidden]],
      [p + 'mlp.up_proj.weight', [inter, hidden]],
      [p + 'mlp.down_proj.weight', [hidden, inter]],
    );
    if (arch === 'qwen2')
      tensors.push(
        [p + 'self_attn.q_proj.bias', [heads * hd]],
        [p + 'self_attn.k_proj.bias', [kvHeads * hd]],
        [p + 'self_attn.v_proj.bias', [kvHeads * hd]],
      );
    if (arch === 'qwen3')
      tensors.push([p + 'self_attn.q_norm.weight', [hd]], [p + 'self_attn.k_norm.weight', [hd]]);
  }
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const datas: Buffer[] = [];
  let offset = 0;
  let seed = 100;
  for (const [name, shp] of tensors) {
    const n = shp.reduce((a, b) => a * b, 1);
    const isNorm = name.includes('norm');
    const values = isNorm
      ? new Float32Array(n).fill(1)
      : randomFloats(n, seed++, name.includes('embed') ? 1 : 0.2);
    const data = Buffer.from(
      kernelTestHooks.quantize(dtype, values, n / shp[shp.length - 1]!, shp[shp.length - 1]!),
    );
    header[name] = { dtype, shape: shp, data_offsets: [offset, offset + data.length] };
    datas.push(data);
    offset += data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(join(dir, 'model.safetensors'), Buffer.concat([len, Buffer.from(json), ...datas]));
}
