#!/usr/bin/env python3
"""Converts a PEFT LoRA adapter of a llama-architecture base model into a GGUF LoRA adapter
that llama.cpp loads, so bench/lora.ts can run llama.cpp (node-llama-cpp) with the very
adapter Prism serves. Written with the `gguf` package; the layout follows llama.cpp's adapter
loader as documented by its GGUF keys:

  general.type "adapter", adapter.type "lora", adapter.lora.alpha; per adapted linear layer
  `blk.N.<gguf name>.weight.lora_a` = A [rank x in] and `.lora_b` = B [out x rank].

llama.cpp scales B·A by alpha / rank, or by 1 when alpha is 0. PEFT's scale can differ per
module (rank_pattern, alpha_pattern, use_rslora), so alpha is written as 0 and each module's
own scale is multiplied into its B. Llama GGUF files hold the q and k rows permuted into
llama.cpp's rotary layout (heads x 2 halves interleaved); B's rows are permuted the same way
so that B·A lines up with the permuted base weight (A, on the input side, is unchanged).

Usage: python3 scripts/peft-to-gguf-lora.py ADAPTER_DIR OUT.gguf --heads N --kv-heads N
"""
from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np

GGUF_NAME = {
    'q_proj': 'attn_q',
    'k_proj': 'attn_k',
    'v_proj': 'attn_v',
    'o_proj': 'attn_output',
    'gate_proj': 'ffn_gate',
    'up_proj': 'ffn_up',
    'down_proj': 'ffn_down',
}
KEY = re.compile(r'^base_model\.model\.model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$')


def pattern_value(patterns: dict, module: str, default: float) -> float:
    """PEFT's rule for rank_pattern / alpha_pattern: the first key matching the module's name end."""
    for key, value in patterns.items():
        if re.match(rf'(.*\.)?({key})$', module):
            return value
    return default


def rope_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """The row order llama GGUF files use for q/k: each head's two rotary halves interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('adapter', type=Path)
    ap.add_argument('out', type=Path)
    ap.add_argument('--heads', type=int, required=True)
    ap.add_argument('--kv-heads', type=int, required=True)
    ap.add_argument('--arch', default='llama')
    args = ap.parse_args()
    import gguf
    from safetensors.numpy import load_file

    cfg = json.loads((args.adapter / 'adapter_config.json').read_text())
    tensors = load_file(str(args.adapter / 'adapter_model.safetensors'))
    pairs: dict[tuple[int, str], dict[str, np.ndarray]] = {}
    for key, value in tensors.items():
        m = KEY.match(key)
        if not m or m.group(2) not in GGUF_NAME:
            raise SystemExit(f'{key}: not a LoRA matrix of a llama linear layer')
        pairs.setdefault((int(m.group(1)), m.group(2)), {})[m.group(3)] = value.astype(np.float32)
    writer = gguf.GGUFWriter(str(args.out), args.arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, 'lora')
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, 0.0)
    for (layer, module), ab in sorted(pairs.items()):
        if set(ab) != {'A', 'B'}:
            raise SystemExit(f'layer {layer} {module}: lora_A and lora_B must both be present')
        a, b = ab['A'], ab['B']
        full = f'model.layers.{layer}.{module}'
        r = pattern_value(cfg.get('rank_pattern') or {}, full, cfg['r'])
        alpha = pattern_value(cfg.get('alpha_pattern') or {}, full, cfg['lora_alpha'])
        b = b * (alpha / math.sqrt(r) if cfg.get('use_rslora') else alpha / r)
        if module == 'q_proj':
            b = rope_permute(b, args.heads)
        elif module == 'k_proj':
            b = rope_permute(b, args.kv_heads)
        base = f'blk.{layer}.{GGUF_NAME[module]}.weight'
        writer.add_tensor(f'{base}.lora_a', np.ascontiguousarray(a))
        writer.add_tensor(f'{base}.lora_b', np.ascontiguousarray(b))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == '__main__':
    main()
