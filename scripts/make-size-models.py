#!/usr/bin/env python3
"""Writes random-weight GGUF files with the layer shapes of real models, for the engine
benchmark's size suite (`npm run bench:engine -- --suite sizes`).

Shapes (vocabulary 32,000 for all, see below):
  1b        Llama-3.2-1B:  16 layers, hidden 2048, FFN 8192, 32 heads, 8 KV heads
  3b        Llama-3.2-3B:  28 layers, hidden 3072, FFN 8192, 24 heads, 8 KV heads
  8b        Llama-3.1-8B:  32 layers, hidden 4096, FFN 14336, 32 heads, 8 KV heads (4.1 GB in q4_0,
            7.6 GB in q8_0: not in the default suite)
  qwen1.5b  Qwen2.5-1.5B:  28 layers, hidden 1536, FFN 8960, 12 heads, 2 KV heads, q/k/v bias
  moe-1b-a400m  Granite-3.1-1B-A400M's shapes in a qwen3moe file (q/k norms, top-k renormalised):
            24 layers, hidden 1024, 16 heads, 8 KV heads, 32 experts of FFN 512, 8 per token
  moe-30b-a3b   Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads, 4 KV heads (head dim 128), 128
            experts of FFN 768, 8 per token (about 17 GB in q4_k: more than a 24 GB machine
            shared with others holds; not in the default suite)
  moe-30b-a3b-l8  the same layers, 8 of the 48 (about 3 GB in q4_k): every matrix of
            Qwen3-30B-A3B at its real shape, few enough for a 24 GB machine to hold both
            engines' copies (the suite loads llama.cpp's and Prism's at once)
Mixture-of-experts files keep the router (ffn_gate_inp) in F32, as llama.cpp does; their
stacked expert matrices ([experts, out, in]) take the file type's rule of the dense ones.

Types: q4_0, q4_1, q8_0 (every matrix of that type, as llama-quantize --pure writes them),
q4_k (llama.cpp's Q4_K_M mix: Q4_K, with Q6_K for output.weight and for attn_v / ffn_down of
the layers llama.cpp's use_more_bits() picks), f16, bf16. Norms (and biases) stay F32.
q5_k_m, q5_k_s, q3_k_m, q2_k, iq4_xs: the F16 file of the same shape quantized by llama.cpp's
own llama_model_quantize (node-llama-cpp's library, scripts/llama_quantize.py), so the file
holds llama.cpp's type mix for that file type (e.g. Q3_K_M: Q3_K, Q4_K and Q5_K matrices,
Q6_K output) and its quantizer's bytes; the F16 file is written first and removed again
unless f16 was asked for too.

Files land in OUT (default models/sizes/, git-ignored) as <size>-<type>.gguf; an existing
file is kept (generation is a cached, separate step) unless --force. Weights are drawn per
tensor from numpy's PCG64 seeded by (seed, tensor name), with the scales of
scripts/make-fixtures.py (whose quantizers and GGUF conventions this reuses by import), so
the activations look like a trained model's in magnitude and the files are reproducible.
Tensors are generated, quantized and written one at a time, so a 3B F16 file needs only
one tensor's worth of memory.

Vocabulary: the default model's tokenizer (SmolLM2, GPT-2-style BPE, 49,152 tokens)
truncated to its first 32,000 tokens, with the merges whose two parts and result all
survive (so every merge llama.cpp applies yields a token that exists; byte tokens and the
special tokens have low ids and stay).

Usage: python3 scripts/make-size-models.py [--sizes 1b,3b,qwen1.5b] [--types q4_0,...]
                                          [--out DIR] [--force] [--list]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'scripts'))
import llama_quantize  # noqa: E402
DEFAULT_OUT = ROOT / 'models' / 'sizes'
VOCAB = 32_000


def load_fixtures_module():
    """scripts/make-fixtures.py (a dash in the name, so not importable by `import`)."""
    spec = importlib.util.spec_from_file_location('make_fixtures', ROOT / 'scripts' / 'make-fixtures.py')
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


fx = load_fixtures_module()

SIZES = {
    '1b': dict(arch='llama', name='Llama-3.2-1B', hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64,
               inter=8192, rope_theta=500_000.0, eps=1e-5, bias=False, seed=11),
    '3b': dict(arch='llama', name='Llama-3.2-3B', hidden=3072, layers=28, heads=24, kv_heads=8, head_dim=128,
               inter=8192, rope_theta=500_000.0, eps=1e-5, bias=False, seed=12),
    '8b': dict(arch='llama', name='Llama-3.1-8B', hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128,
               inter=14336, rope_theta=500_000.0, eps=1e-5, bias=False, seed=16),
    'qwen1.5b': dict(arch='qwen2', name='Qwen2.5-1.5B', hidden=1536, layers=28, heads=12, kv_heads=2,
                     head_dim=128, inter=8960, rope_theta=1_000_000.0, eps=1e-6, bias=True, seed=13),
    'moe-1b-a400m': dict(arch='qwen3moe', name='Granite-3.1-1B-A400M', hidden=1024, layers=24, heads=16, kv_heads=8,
                         head_dim=64, inter=512, experts=32, used=8, expert_inter=512, rope_theta=1_500_000.0,
                         eps=1e-6, bias=False, seed=14),
    'moe-30b-a3b': dict(arch='qwen3moe', name='Qwen3-30B-A3B', hidden=2048, layers=48, heads=32, kv_heads=4,
                        head_dim=128, inter=6144, experts=128, used=8, expert_inter=768, rope_theta=1_000_000.0,
                        eps=1e-6, bias=False, seed=15),
}
# Qwen3-30B-A3B cut to its first 8 layers: per-layer shapes, expert count and routing as the
# whole model, so a token's bytes and work per layer are the real ones.
SIZES['moe-30b-a3b-l8'] = dict(SIZES['moe-30b-a3b'], name='Qwen3-30B-A3B (8 of 48 layers)', layers=8)
TYPES = ['q4_0', 'q4_1', 'q4_k', 'q8_0', 'f16', 'bf16', 'q5_k_m', 'q5_k_s', 'q3_k_m', 'q2_k', 'iq4_xs']
# File types written by llama.cpp's quantizer from the F16 file (llama_ftype names).
LLAMA_QUANTIZED = {'q5_k_m': 'Q5_K_M', 'q5_k_s': 'Q5_K_S', 'q3_k_m': 'Q3_K_M', 'q2_k': 'Q2_K', 'iq4_xs': 'IQ4_XS'}
CONTEXT = 4096


def use_more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's rule (llama-quant.cpp) for the layers whose attn_v / ffn_down get Q6_K in Q4_K_M."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def storage_type(file_type: str, tensor: str, layer: int | None, layers: int) -> str:
    """GGML type name of a matrix in a file of `file_type`."""
    if file_type != 'q4_k':
        return file_type.upper()
    if tensor == 'output.weight':
        return 'Q6_K'
    if layer is not None and tensor.endswith(('attn_v.weight', 'ffn_down.weight', 'ffn_down_exps.weight')) \
            and use_more_bits(layer, layers):
        return 'Q6_K'
    return 'Q4_K'


def tensor_plan(spec: dict) -> list[tuple[str, tuple[int, ...], float, float, int | None]]:
    """(GGUF name, [out, in] (or [experts, out, in]) shape, std, mean, layer) of every tensor, in file order."""
    d, hd, inter = spec['hidden'], spec['head_dim'], spec['inter']
    nq, nkv = spec['heads'] * hd, spec['kv_heads'] * hd
    plan: list[tuple[str, tuple[int, ...], float, float, int | None]] = [
        ('token_embd.weight', (VOCAB, d), fx.EMBED_STD, 0.0, None),
    ]
    for i in range(spec['layers']):
        p = f'blk.{i}.'
        plan += [
            (p + 'attn_norm.weight', (d,), fx.NORM_JITTER, 1.0, i),
            (p + 'attn_q.weight', (nq, d), fx.QK_GAIN / np.sqrt(d), 0.0, i),
            (p + 'attn_k.weight', (nkv, d), fx.QK_GAIN / np.sqrt(d), 0.0, i),
            (p + 'attn_v.weight', (nkv, d), 1 / np.sqrt(d), 0.0, i),
        ]
        if spec['bias']:
            plan += [(p + f'attn_{x}.bias', (n,), fx.BIAS_STD, 0.0, i) for x, n in (('q', nq), ('k', nkv), ('v', nkv))]
        if spec['arch'] == 'qwen3moe':
            plan += [(p + f'attn_{x}_norm.weight', (hd,), fx.NORM_JITTER, fx.QK_GAIN, i) for x in ('q', 'k')]
        plan += [
            (p + 'attn_output.weight', (d, nq), fx.ATTN_OUT_GAIN / np.sqrt(nq), 0.0, i),
            (p + 'ffn_norm.weight', (d,), fx.NORM_JITTER, 1.0, i),
        ]
        if 'experts' in spec:
            E, ei = spec['experts'], spec['expert_inter']
            plan += [
                (p + 'ffn_gate_inp.weight', (E, d), fx.ROUTER_GAIN / np.sqrt(d), 0.0, i),
                (p + 'ffn_gate_exps.weight', (E, ei, d), 1 / np.sqrt(d), 0.0, i),
                (p + 'ffn_up_exps.weight', (E, ei, d), 1 / np.sqrt(d), 0.0, i),
                (p + 'ffn_down_exps.weight', (E, d, ei), fx.MLP_OUT_GAIN / np.sqrt(ei), 0.0, i),
            ]
            continue
        plan += [
            (p + 'ffn_gate.weight', (inter, d), 1 / np.sqrt(d), 0.0, i),
            (p + 'ffn_up.weight', (inter, d), 1 / np.sqrt(d), 0.0, i),
            (p + 'ffn_down.weight', (d, inter), fx.MLP_OUT_GAIN / np.sqrt(inter), 0.0, i),
        ]
    plan += [('output_norm.weight', (d,), fx.NORM_JITTER, 1.0, None),
             ('output.weight', (VOCAB, d), fx.EMBED_STD, 0.0, None)]
    return plan


def draw(seed: int, name: str, shape: tuple[int, ...], std: float, mean: float) -> np.ndarray:
    x = fx.tensor_rng(seed, name).standard_normal(shape, dtype=np.float32)
    x *= np.float32(std)
    if mean:
        x += np.float32(mean)
    return x


def encode(arr: np.ndarray, type_name: str) -> np.ndarray:
    """Bytes (or f32/f16 values) of a matrix (or stack of expert matrices) as stored, in row
    chunks to bound memory."""
    if type_name == 'F16':
        return arr.astype(np.float16)
    rows = arr.reshape(-1, arr.shape[-1])
    chunk = max(1, (8 << 20) // rows.shape[1])
    data = np.concatenate([fx.quantize(rows[r:r + chunk], type_name)[0] for r in range(0, rows.shape[0], chunk)])
    return data.reshape(*arr.shape[:-1], -1)


def stored_shape_and_bytes(shape: tuple[int, ...], type_name: str) -> tuple[tuple[int, ...], np.dtype, int]:
    import gguf
    if len(shape) == 1 or type_name == 'F32':
        return shape, np.dtype(np.float32), int(np.prod(shape)) * 4
    if type_name == 'F16':
        return shape, np.dtype(np.float16), int(np.prod(shape)) * 2
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]]
    *outer, cols = shape
    if cols % block:
        raise SystemExit(f'make-size-models: {cols} columns are not a multiple of {type_name} blocks ({block})')
    return (*outer, cols // block * size), np.dtype(np.uint8), int(np.prod(outer)) * (cols // block * size)


def tensor_type(file_type: str, name: str, shape: tuple[int, ...], layer: int | None, layers: int) -> str:
    """Storage type of one tensor: vectors and MoE routers stay F32, as llama.cpp keeps them."""
    if len(shape) == 1 or name.endswith('ffn_gate_inp.weight'):
        return 'F32'
    return storage_type(file_type, name, layer, layers)


def active_fraction(spec: dict, name: str) -> float:
    """Share of a tensor one decoded token reads: the experts it is routed to of an expert stack."""
    return spec['used'] / spec['experts'] if name.endswith('_exps.weight') else 1.0


def file_bytes_per_token(path: Path, spec: dict) -> int:
    """bytes_per_token() of an existing file, from its own tensor table."""
    import gguf
    reader = gguf.GGUFReader(path)
    return sum(round(int(t.n_bytes) * active_fraction(spec, t.name)) for t in reader.tensors
               if t.name != 'token_embd.weight')


def bytes_per_token(size: str, file_type: str, path: Path | None = None) -> int:
    """Weight bytes a decoded token reads: every tensor but the embedding table (one row); of
    a mixture of experts only the experts one token uses. For llama.cpp-quantized files the
    type mix is llama.cpp's, read from the file (0 while it does not exist yet)."""
    if file_type in LLAMA_QUANTIZED:
        return file_bytes_per_token(path, SIZES[size]) if path is not None and path.exists() else 0
    spec = SIZES[size]
    total = 0
    for name, shape, _, _, layer in tensor_plan(spec):
        if name == 'token_embd.weight':
            continue
        t = tensor_type(file_type, name, shape, layer, spec['layers'])
        total += round(stored_shape_and_bytes(shape, t)[2] * active_fraction(spec, name))
    return total


def truncated_tokenizer(kvs: list[tuple]) -> list[tuple]:
    """The tokenizer.* metadata cut to VOCAB tokens (see the module docstring)."""
    out = []
    tokens = next(v for k, v, _, _ in kvs if k == 'tokenizer.ggml.tokens')
    keep = set(tokens[:VOCAB])
    for key, value, vtype, sub in kvs:
        if key in ('tokenizer.ggml.tokens', 'tokenizer.ggml.token_type', 'tokenizer.ggml.scores'):
            value = value[:VOCAB]
        elif key == 'tokenizer.ggml.merges':
            kept = []
            for m in value:
                a, _, b = m.partition(' ')
                if a in keep and b in keep and a + b in keep:
                    kept.append(m)
            value = kept
        elif key.endswith('_token_id') and isinstance(value, int) and value >= VOCAB:
            continue  # a special token cut off with the vocabulary
        out.append((key, value, vtype, sub))
    return out


def write_quantized(out: Path, size: str, file_type: str) -> Path:
    """<size>-<file_type>.gguf from the F16 file of the size (written first) by llama.cpp's quantizer."""
    final = out / f'{size}-{file_type}.gguf'
    source = out / f'{size}-f16.gguf'
    fd, tmp = tempfile.mkstemp(prefix=f'.{final.name}-', dir=out)
    os.close(fd)
    try:
        llama_quantize.quantize_model(source, Path(tmp), LLAMA_QUANTIZED[file_type], threads=os.cpu_count() or 2,
                                      quiet=True)
        fx.replace_path(Path(tmp), final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def write_model(out: Path, size: str, file_type: str, tokenizer_kvs: list[tuple]) -> Path:
    import gguf
    spec = SIZES[size]
    final = out / f'{size}-{file_type}.gguf'
    plan = tensor_plan(spec)
    fd, tmp = tempfile.mkstemp(prefix=f'.{final.name}-', dir=out)
    os.close(fd)
    try:
        w = gguf.GGUFWriter(tmp, spec['arch'])
        w.add_name(f'prism-size-{size}-{file_type} ({spec["name"]} shapes, random weights)')
        w.add_context_length(CONTEXT)
        w.add_embedding_length(spec['hidden'])
        w.add_block_count(spec['layers'])
        w.add_feed_forward_length(spec['inter'])
        w.add_head_count(spec['heads'])
        w.add_head_count_kv(spec['kv_heads'])
        w.add_key_length(spec['head_dim'])
        w.add_value_length(spec['head_dim'])
        w.add_rope_dimension_count(spec['head_dim'])
        w.add_rope_freq_base(spec['rope_theta'])
        w.add_layer_norm_rms_eps(spec['eps'])
        w.add_vocab_size(VOCAB)
        if 'experts' in spec:
            w.add_expert_count(spec['experts'])
            w.add_expert_used_count(spec['used'])
            w.add_expert_feed_forward_length(spec['expert_inter'])
        w.add_file_type(fx.FILE_TYPE[file_type.upper()])  # Q4_K: 15 = LLAMA_FTYPE_MOSTLY_Q4_K_M
        w.add_quantization_version(2)
        for key, value, vtype, sub in tokenizer_kvs:
            w.add_key_value(key, value, vtype, sub_type=sub)
        types = {}
        for name, shape, _, _, layer in plan:
            t = tensor_type(file_type, name, shape, layer, spec['layers'])
            types[name] = t
            stored, dtype, nbytes = stored_shape_and_bytes(shape, t)
            raw = None if t in ('F32', 'F16') else gguf.GGMLQuantizationType[t]
            w.add_tensor_info(name, stored, dtype, nbytes, raw_dtype=raw)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        for name, shape, std, mean, layer in plan:
            arr = draw(spec['seed'], name, shape, std, mean)
            if name.endswith(('attn_q.weight', 'attn_k.weight')) and spec['arch'] == 'llama':
                # llama GGUFs store q/k rows permuted for GGML's adjacent-pair RoPE (the values
                # are i.i.d., but the layout is kept honest for anyone reading the file).
                arr = fx.permute_for_gguf(arr, spec['heads'] if 'attn_q' in name else spec['kv_heads'])
            w.write_tensor_data(arr if types[name] == 'F32' else encode(arr, types[name]))
        w.close()
        fx.replace_path(Path(tmp), final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def parse_list(value: str, allowed: list[str], what: str) -> list[str]:
    items = [s.strip() for s in value.split(',') if s.strip()]
    for item in items:
        if item not in allowed:
            raise SystemExit(f'make-size-models: --{what} takes a comma-separated subset of {",".join(allowed)}; got {item!r}')
    return items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sizes', default=','.join(SIZES))
    ap.add_argument('--types', default=','.join(TYPES))
    ap.add_argument('--out', type=Path, default=DEFAULT_OUT)
    ap.add_argument('--tokenizer-gguf', type=Path, default=fx.DEFAULT_TOKENIZER_GGUF)
    ap.add_argument('--force', action='store_true', help='rewrite files that already exist')
    ap.add_argument('--list', action='store_true',
                    help='print one JSON object per file (path, size, type, whether it exists, weight bytes '
                         'read per decoded token: every matrix but token_embd) and exit')
    args = ap.parse_args()
    sizes = parse_list(args.sizes, list(SIZES), 'sizes')
    types = parse_list(args.types, TYPES, 'types')
    out: Path = args.out
    wanted = [(s, t, out / f'{s}-{t}.gguf') for s in sizes for t in types]
    if args.list:
        for s, t, p in wanted:
            print(json.dumps({'size': s, 'type': t, 'shape': SIZES[s]['name'], 'path': str(p), 'exists': p.exists(),
                              'bytesPerToken': bytes_per_token(s, t, p)}))
        return
    todo = [(s, t, p) for s, t, p in wanted if args.force or not p.exists()]
    if not todo:
        return
    if not args.tokenizer_gguf.exists():
        raise SystemExit(f'make-size-models: {args.tokenizer_gguf} is missing (run npm run fetch-model)')
    out.mkdir(parents=True, exist_ok=True)
    fx.check_quantizers()
    kvs = truncated_tokenizer(fx.read_tokenizer_metadata(args.tokenizer_gguf))
    # Plain files first: an f16 file asked for is then the source of the quantized ones; an
    # F16 source written only for them is removed at the end.
    todo.sort(key=lambda item: item[1] in LLAMA_QUANTIZED)
    temporary: list[Path] = []
    try:
        for size, file_type, path in todo:
            start = time.monotonic()
            if file_type in LLAMA_QUANTIZED:
                source = out / f'{size}-f16.gguf'
                if not source.exists():
                    write_model(out, size, 'f16', kvs)
                    if 'f16' not in types:
                        temporary.append(source)
                write_quantized(out, size, file_type)
            else:
                write_model(out, size, file_type, kvs)
            print(f'make-size-models: {path} ({path.stat().st_size / 1e6:.0f} MB, {time.monotonic() - start:.0f} s)',
                  file=sys.stderr)
    finally:
        for source in temporary:
            source.unlink(missing_ok=True)


if __name__ == '__main__':
    main()
