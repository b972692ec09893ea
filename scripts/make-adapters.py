#!/usr/bin/env python3
"""Generates random-weight PEFT LoRA adapters for Prism's adapter tests (seeded, seconds).

Each adapter is made the way users make theirs: `peft.get_peft_model` on a transformers
model of the base's architecture, then `save_pretrained`, which writes
adapter_config.json and adapter_model.safetensors. Only the LoRA matrices are replaced by
seeded random values (PEFT's default init leaves B = 0, an adapter with no effect).

Why the values are scaled the way they are: an adapter's update should move the logits
by a clearly measurable amount (a wrong row, permutation or scale shows in the top-1
agreement and the logit error) without turning the model into noise. A ~ N(0, 1/in), so
A·x has the size of an element of x; B is scaled so that scale·B·A·x is about GAIN times
the size of the base layer's own output W·x (the base weights' std is read from the base
model file).

Writes into OUT (default test/fixtures/generated/adapters/, git-ignored) one directory per
adapter and manifest.json (written last) with the generator's hash and, per adapter, its
base model, rank and targets.

Usage: python3 scripts/make-adapters.py --default-model PATH --fixtures DIR [--out DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']
GAIN = 0.25

# name: (base key, peft LoraConfig fields, how B is filled, saved dtype)
SPECS = {
    # B = 0: PEFT's own init (A random, B zero) — must give exactly the base model's tokens.
    'default-zero': ('default', dict(r=8, lora_alpha=16, target_modules=ALL), 'zero', 'float32'),
    'default-qv': ('default', dict(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj']), 'random', 'float32'),
    # Per-layer ranks and alphas through rank_pattern / alpha_pattern.
    'default-all': ('default', dict(r=16, lora_alpha=32, target_modules=ALL, rank_pattern={'down_proj': 4},
                                    alpha_pattern={'o_proj': 8}), 'random', 'float32'),
    'default-rslora': ('default', dict(r=8, lora_alpha=8, use_rslora=True,
                                       target_modules=['k_proj', 'o_proj', 'gate_proj', 'up_proj']),
                       'random', 'bfloat16'),
    'default-mlp': ('default', dict(r=4, lora_alpha=8, target_modules=['gate_proj', 'up_proj', 'down_proj']),
                    'random', 'float16'),
    'default-r64': ('default', dict(r=64, lora_alpha=64, target_modules=ALL), 'random', 'float32'),
    'llama-all': ('llama-f32', dict(r=8, lora_alpha=16, target_modules=ALL), 'random', 'float32'),
    'qwen2-all': ('qwen2-untied-f32', dict(r=8, lora_alpha=16, target_modules=ALL), 'random', 'bfloat16'),
}


def rng(name: str, key: str) -> np.random.Generator:
    return np.random.default_rng([11, zlib.crc32(f'{name}/{key}'.encode())])


def base_model(path: Path):
    """A transformers model of the base's architecture and shapes (weights irrelevant)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if path.is_file():
        cfg = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    else:
        cfg = AutoConfig.from_pretrained(str(path))
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)


def base_weight_std(path: Path) -> dict[str, float]:
    """Std of each target's weight in layer 0 of the real base file (what GAIN is relative to)."""
    out: dict[str, float] = {}
    if path.is_file():
        import gguf
        from gguf.quants import dequantize

        names = {'q_proj': 'attn_q', 'k_proj': 'attn_k', 'v_proj': 'attn_v', 'o_proj': 'attn_output',
                 'gate_proj': 'ffn_gate', 'up_proj': 'ffn_up', 'down_proj': 'ffn_down'}
        reader = gguf.GGUFReader(str(path))
        by_name = {t.name: t for t in reader.tensors}
        for hf, g in names.items():
            t = by_name[f'blk.0.{g}.weight']
            out[hf] = float(np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).std())
    else:
        from safetensors.numpy import load_file

        w = {}
        for f in sorted(path.glob('*.safetensors')):
            w.update(load_file(str(f)))
        for hf in ALL:
            key = next(k for k in w if k.endswith(f'layers.0.self_attn.{hf}.weight') or k.endswith(f'layers.0.mlp.{hf}.weight'))
            out[hf] = float(w[key].astype(np.float32).std())
    return out


def make(name: str, base_path: Path, fields: dict, fill: str, dtype: str, out: Path) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model

    model = base_model(base_path)
    peft_model = get_peft_model(model, LoraConfig(**fields, bias='none', task_type='CAUSAL_LM'))
    stds = base_weight_std(base_path) if fill == 'random' else {}
    with torch.no_grad():
        for pname, p in peft_model.named_parameters():
            if '.lora_A.' not in pname and '.lora_B.' not in pname:
                continue
            module = pname.split('.lora_')[0].split('.')[-1]
            r_mod = p.shape[0] if '.lora_A.' in pname else p.shape[1]
            if '.lora_A.' in pname:
                in_f = p.shape[1]
                p.copy_(torch.from_numpy(rng(name, pname).standard_normal(tuple(p.shape)).astype(np.float32) / np.sqrt(in_f)))
            elif fill == 'zero':
                p.zero_()
            else:
                lora_layer = peft_model.get_submodule(pname.split('.lora_B.')[0])
                scale = float(lora_layer.scaling['default'])
                in_f = lora_layer.in_features
                sigma = GAIN * np.sqrt(in_f) * stds[module] / (scale * np.sqrt(r_mod))
                p.copy_(torch.from_numpy(rng(name, pname).standard_normal(tuple(p.shape)).astype(np.float32) * sigma))
            if dtype != 'float32':
                p.data = p.data.to(getattr(torch, dtype))
    target = out / name
    if target.exists():
        shutil.rmtree(target)
    peft_model.save_pretrained(str(target))
    for f in target.iterdir():
        f.chmod(0o644)
    target.chmod(0o755)
    readme = target / 'README.md'
    if readme.exists():
        readme.unlink()
    return {'name': name, 'base': SPECS[name][0], 'path': name, 'rank': int(max(
        [fields['r'], *fields.get('rank_pattern', {}).values()])), 'targets': fields['target_modules'],
        'dtype': dtype, 'zero': fill == 'zero'}


def generator_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--default-model', type=Path, default=ROOT / 'models' / 'SmolLM2-135M-Instruct.Q4_1.gguf')
    ap.add_argument('--fixtures', type=Path, default=ROOT / 'test' / 'fixtures' / 'generated')
    ap.add_argument('--out', type=Path, default=ROOT / 'test' / 'fixtures' / 'generated' / 'adapters')
    args = ap.parse_args()
    bases = {'default': args.default_model, 'llama-f32': args.fixtures / 'llama-f32.gguf',
             'qwen2-untied-f32': args.fixtures / 'qwen2-untied-f32'}
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / 'manifest.json'
    if manifest_path.exists():
        manifest_path.unlink()
    entries = []
    for name, (base, fields, fill, dtype) in SPECS.items():
        entries.append(make(name, bases[base], fields, fill, dtype, args.out))
        print(f'make-adapters: {name}/', flush=True)
    tmp = manifest_path.with_suffix('.json.tmp')
    tmp.write_text(json.dumps({'generator': generator_hash(), 'adapters': entries}, indent=2) + '\n')
    os.replace(tmp, manifest_path)


if __name__ == '__main__':
    main()
