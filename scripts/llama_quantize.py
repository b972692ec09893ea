"""llama.cpp's own quantizers and dequantizers, called through the prebuilt libraries that
node-llama-cpp (an npm dependency of the project) ships, so that test and benchmark files
hold exactly the bytes llama.cpp's tools write, with llama.cpp's own type mixes.

  quantize(type_name, x)               ggml_quantize_chunk: rows of x (f32) -> block bytes
  dequantize(type_name, q, rows, cols) ggml's dequantize_row_<type> -> f32
  quantize_model(src, dst, ftype)      llama_model_quantize: a whole GGUF file, as the
                                       llama-quantize tool does (e.g. ftype 'Q5_K_M')

The struct llama_model_quantize_params below mirrors include/llama.h of the llama.cpp
release node-llama-cpp pins (node_modules/node-llama-cpp/llama/llama.cpp.info.json);
quantize_model() checks the release tag before it passes the struct.
"""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BINS = ROOT / 'node_modules' / '@node-llama-cpp' / 'linux-x64' / 'bins' / 'linux-x64'
INFO = ROOT / 'node_modules' / 'node-llama-cpp' / 'llama' / 'llama.cpp.info.json'
PARAMS_RELEASE = 'v0.4.0'  # the struct below follows this llama.cpp release's llama.h

# GGML type numbers and block geometry (values, bytes) of the types used here.
GGML_TYPES = {
    'F32': (0, 1, 4), 'F16': (1, 1, 2), 'Q4_0': (2, 32, 18), 'Q4_1': (3, 32, 20), 'Q5_0': (6, 32, 22),
    'Q5_1': (7, 32, 24), 'Q8_0': (8, 32, 34), 'Q2_K': (10, 256, 84), 'Q3_K': (11, 256, 110),
    'Q4_K': (12, 256, 144), 'Q5_K': (13, 256, 176), 'Q6_K': (14, 256, 210), 'IQ4_NL': (20, 32, 18),
    'IQ4_XS': (23, 256, 136),
}
# llama_ftype numbers (include/llama.h) of the file types the project generates.
FTYPES = {
    'Q4_0': 2, 'Q4_1': 3, 'Q8_0': 7, 'Q5_0': 8, 'Q5_1': 9, 'Q2_K': 10, 'Q3_K_S': 11, 'Q3_K_M': 12,
    'Q3_K_L': 13, 'Q4_K_S': 14, 'Q4_K_M': 15, 'Q5_K_S': 16, 'Q5_K_M': 17, 'Q6_K': 18, 'IQ4_NL': 25,
    'IQ4_XS': 30,
}

_libs: dict[str, ctypes.CDLL] = {}


def available() -> bool:
    return (BINS / 'libggml-base.so').exists()


def _lib(name: str) -> ctypes.CDLL:
    if name not in _libs:
        if not available():
            raise RuntimeError(f'llama.cpp libraries not found under {BINS} (run npm ci)')
        # libllama needs libggml (and it libggml-base) resolvable: load them globally first.
        for dep in ('libggml-base.so', 'libggml.v0.4.0.so'):
            if dep not in _libs:
                _libs[dep] = ctypes.CDLL(str(BINS / dep), mode=ctypes.RTLD_GLOBAL)
        if name not in _libs:
            _libs[name] = ctypes.CDLL(str(BINS / name))
    return _libs[name]


def row_bytes(type_name: str, cols: int) -> int:
    _, block, size = GGML_TYPES[type_name]
    if cols % block:
        raise ValueError(f'{cols} values are not a multiple of the {type_name} block ({block})')
    return cols // block * size


def quantize(type_name: str, x: np.ndarray) -> np.ndarray:
    """Rows of x quantized by ggml_quantize_chunk (no importance matrix), as uint8 [rows, bytes]."""
    base = _lib('libggml-base.so')
    x = np.ascontiguousarray(x, dtype=np.float32)
    rows, cols = x.shape
    out = np.zeros((rows, row_bytes(type_name, cols)), dtype=np.uint8)
    f = base.ggml_quantize_chunk
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_void_p]
    n = f(GGML_TYPES[type_name][0], x.ctypes.data, out.ctypes.data, 0, rows, cols, None)
    if n != out.size:
        raise RuntimeError(f'ggml_quantize_chunk wrote {n} bytes, expected {out.size}')
    return out


def dequantize(type_name: str, q: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """ggml's dequantize_row_<type> over rows × cols values stored in q."""
    base = _lib('libggml-base.so')
    q = np.ascontiguousarray(q, dtype=np.uint8).reshape(-1)
    if q.size != rows * row_bytes(type_name, cols):
        raise ValueError('dequantize: byte count does not match the shape')
    out = np.zeros((rows, cols), dtype=np.float32)
    f = getattr(base, 'dequantize_row_' + type_name.lower().replace('_k', '_K'))
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    f(q.ctypes.data, out.ctypes.data, rows * cols)
    return out


class _QuantizeParams(ctypes.Structure):
    _fields_ = [
        ('nthread', ctypes.c_int32), ('ftype', ctypes.c_int), ('output_tensor_type', ctypes.c_int),
        ('token_embedding_type', ctypes.c_int), ('allow_requantize', ctypes.c_bool),
        ('quantize_output_tensor', ctypes.c_bool), ('only_copy', ctypes.c_bool), ('pure', ctypes.c_bool),
        ('keep_split', ctypes.c_bool), ('dry_run', ctypes.c_bool), ('imatrix', ctypes.c_void_p),
        ('kv_overrides', ctypes.c_void_p), ('tt_overrides', ctypes.c_void_p), ('prune_layers', ctypes.c_void_p),
        ('max_buf_size', ctypes.c_size_t),
    ]


_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_silent = _LOG_CALLBACK(lambda level, text, user: None)


def quantize_model(src: Path, dst: Path, ftype: str, threads: int = 2, allow_requantize: bool = False,
                   quiet: bool = False) -> None:
    """Writes dst as llama-quantize would from src (F32/F16/BF16, or any type with allow_requantize).
    quiet: drop llama.cpp's per-tensor log lines."""
    release = json.loads(INFO.read_text())['tag'] if INFO.exists() else '?'
    if release != PARAMS_RELEASE:
        raise RuntimeError(f'llama_quantize.py follows llama.h of {PARAMS_RELEASE}; node-llama-cpp ships {release}: '
                           'check llama_model_quantize_params and update the struct')
    lib = _lib('libllama.v0.4.0.so')
    if quiet:
        lib.llama_log_set.argtypes = [_LOG_CALLBACK, ctypes.c_void_p]
        lib.llama_log_set(_silent, None)
    lib.llama_model_quantize_default_params.restype = _QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    p = lib.llama_model_quantize_default_params()
    p.ftype = FTYPES[ftype]
    p.nthread = threads
    p.allow_requantize = allow_requantize
    rc = lib.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p))
    if rc != 0:
        raise RuntimeError(f'llama_model_quantize({src} -> {dst}, {ftype}) failed with {rc}')


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description='Quantize a GGUF file with llama.cpp\'s own quantizer (llama-quantize).')
    ap.add_argument('src', type=Path)
    ap.add_argument('dst', type=Path)
    ap.add_argument('ftype', choices=sorted(FTYPES))
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--allow-requantize', action='store_true',
                    help='accept a quantized source (its values are dequantized first, as llama-quantize does)')
    args = ap.parse_args()
    quantize_model(args.src, args.dst, args.ftype, threads=args.threads, allow_requantize=args.allow_requantize,
                   quiet=True)


if __name__ == '__main__':
    main()
