#!/usr/bin/env python3
"""Cross-checks the C++ reference (de)quantizers against the Python gguf package and against
llama.cpp's own library (scripts/llama_quantize.py, node-llama-cpp's prebuilt ggml).

For every type: random floats -> C++ quantizer -> bytes, and (where llama.cpp's library is
installed) the same floats -> ggml_quantize_chunk -> bytes, i.e. blocks as llama.cpp's real
quantizer writes them; both byte sets must dequantize to the same floats (bit for bit) in
C++, in gguf.quants and in ggml's dequantize_row_*; where gguf has a quantizer, its bytes
must match the C++ quantizer's. Also checks the round-trip error of each type.
Usage: python3 bench/kernels/check_gguf.py [/tmp/prism-kernels/kernels_check]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import llama_quantize  # noqa: E402

TOOL = sys.argv[1] if len(sys.argv) > 1 else "/tmp/prism-kernels/kernels_check"
TYPES = {"F32": T.F32, "F16": T.F16, "BF16": T.BF16, "Q8_0": T.Q8_0, "Q4_0": T.Q4_0,
         "Q4_1": T.Q4_1, "Q4_K": T.Q4_K, "Q6_K": T.Q6_K, "Q5_0": T.Q5_0, "Q5_1": T.Q5_1,
         "Q5_K": T.Q5_K, "Q3_K": T.Q3_K, "Q2_K": T.Q2_K, "IQ4_NL": T.IQ4_NL, "IQ4_XS": T.IQ4_XS}
# Round-trip error bound (max |x - deq(q(x))| relative to the row's max |x|).
BOUND = {"F32": 0, "F16": 1e-3, "BF16": 8e-3, "Q8_0": 1 / 127, "Q4_0": 1 / 8 + 1e-3,
         "Q4_1": 1 / 15 + 1e-3, "Q4_K": 0.2, "Q6_K": 0.05, "Q5_0": 1 / 16 + 1e-3, "Q5_1": 1 / 31 + 1e-3,
         "Q5_K": 0.1, "Q3_K": 0.35, "Q2_K": 0.6, "IQ4_NL": 0.12, "IQ4_XS": 0.2}

rng = np.random.default_rng(1)
failed = 0
with tempfile.TemporaryDirectory() as d:
    for name, qt in TYPES.items():
        rows, cols = 7, 512
        x = (rng.standard_normal((rows, cols)) * rng.uniform(0.01, 10, (rows, 1))).astype(np.float32)
        x[0, :40] = 0  # an all-zero block
        fin, fq, fout = (os.path.join(d, n) for n in ("x.f32", "x.q", "x.deq"))
        x.tofile(fin)
        subprocess.run([TOOL, "quant", name, str(rows), str(cols), fin, fq], check=True)
        subprocess.run([TOOL, "dequant", name, str(rows), str(cols), fq, fout], check=True)
        qbytes = np.fromfile(fq, dtype=np.uint8).reshape(rows, -1)
        ours = np.fromfile(fout, dtype=np.float32).reshape(rows, cols)
        theirs = quants.dequantize(qbytes, qt).astype(np.float32).reshape(rows, cols)
        problems = []
        if not np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)):
            problems.append(f"dequantize differs from gguf at {np.argwhere(ours != theirs)[:3].tolist()}")
        if llama_quantize.available() and llama_quantize.GGML_TYPES.get(name, (0, 1))[1] > 1:
            ggml = llama_quantize.dequantize(name, qbytes, rows, cols)
            if not np.array_equal(ours.view(np.uint32), ggml.view(np.uint32)):
                problems.append(f"dequantize differs from ggml at {np.argwhere(ours != ggml)[:3].tolist()}")
            # Blocks from llama.cpp's own quantizer: the same three dequantizers must agree.
            lq = llama_quantize.quantize(name, x)
            flq, fld = os.path.join(d, "x.lq"), os.path.join(d, "x.ldeq")
            lq.tofile(flq)
            subprocess.run([TOOL, "dequant", name, str(rows), str(cols), flq, fld], check=True)
            ours2 = np.fromfile(fld, dtype=np.float32).reshape(rows, cols)
            for who, other in (("ggml", llama_quantize.dequantize(name, lq, rows, cols)),
                               ("gguf", quants.dequantize(lq, qt).astype(np.float32).reshape(rows, cols))):
                if not np.array_equal(ours2.view(np.uint32), other.view(np.uint32)):
                    problems.append(f"llama.cpp-quantized blocks dequantize differently from {who}")
        try:
            ref = quants.quantize(x, qt)
            if not np.array_equal(np.ascontiguousarray(ref).view(np.uint8).reshape(rows, -1), qbytes):
                problems.append("quantize bytes differ from gguf.quants.quantize")
        except NotImplementedError:
            pass  # gguf has no quantizer for this type (K-quants)
        err = np.abs(ours - x).max(axis=1) / np.maximum(np.abs(x).max(axis=1), 1e-30)
        if err.max() > BOUND[name]:
            problems.append(f"round-trip error {err.max():.4g} > {BOUND[name]}")
        print(f"{name:5} {'ok' if not problems else 'FAIL ' + '; '.join(problems)}  (round-trip {err.max():.3g})")
        failed += bool(problems)
sys.exit(1 if failed else 0)
