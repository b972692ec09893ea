#!/usr/bin/env python3
"""Float reference for Prism's numerics test: teacher-forced float32 logits of a model.

The same weights Prism runs, in float32 on the CPU through Hugging Face `transformers` +
`torch`: a GGUF file is loaded with `from_pretrained(dir, gguf_file=...)`, which
dequantizes every tensor (Q4_K, Q8_0, ...) to float and undoes llama.cpp's q/k row
permutation; a safetensors directory is loaded as is (BF16 weights are upcast exactly).
So the only differences from Prism are Prism's own arithmetic (activation quantization,
accumulation order, approximations) — which is what the test measures.

Input: a JSON job (or a list of jobs, to pay the ~20 s import/model cost once) on stdin or
in the file given by --jobs:
  {"model": "path/to/file.gguf" | "path/to/hf-dir",
   "ids": [int, ...]          # token ids to run, or
   "text": "..."              # text to tokenize with the model's own tokenizer (no specials),
   "tokenizer": "path",       # optional: tokenize "text" with this model's tokenizer
                              #   instead (the llama fixtures share the default model's
                              #   vocabulary; building a GGUF tokenizer costs seconds)
   "maxTokens": 570,          # optional cap on the tokenized length
   "config": {...},           # optional config overrides (e.g. {"sliding_window": null}), to
                              #   show what a model computes without one of its features
   "out": "path/prefix"}
Output per job: <out>.f32, the raw little-endian float32 logits [T x V] (row t = logits
after token t, i.e. the prediction of token t+1), and <out>.json with
{"model", "ids", "shape": [T, V], "dtype": "float32", "seconds"}. The .json is written
last, so its presence means the pair is complete.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# Bump when the numbers this script produces for the same model and ids would change;
# test/reference/reference.ts keys its cache on it.
REFERENCE_VERSION = 1


def load_model(model_path: Path, overrides: dict | None = None):
    import torch
    from transformers import AutoModelForCausalLM

    kwargs = dict(dtype=torch.float32, attn_implementation='eager', **(overrides or {}))
    if model_path.is_file():
        if model_path.suffix != '.gguf':
            raise SystemExit(f'reference: {model_path} is a file but not a .gguf')
        model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name, **kwargs)
    elif (model_path / 'config.json').exists():
        # A vision-language folder (Idefics3) is run on its text alone: no pixel_values, so its
        # logits are its text model's, which Prism loads from the same folder.
        if 'vision_config' in json.loads((model_path / 'config.json').read_text()):
            from transformers import AutoModelForImageTextToText
            model = AutoModelForImageTextToText.from_pretrained(str(model_path), **kwargs)
        else:
            model = AutoModelForCausalLM.from_pretrained(str(model_path), **kwargs)
    else:
        raise SystemExit(f'reference: {model_path} is neither a .gguf file nor a folder with config.json')
    model.eval()
    return model


def load_tokenizer(model_path: Path):
    from transformers import AutoTokenizer

    if model_path.is_file():
        return AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    return AutoTokenizer.from_pretrained(str(model_path))


def teacher_forced_logits(model, ids: list[int]):
    import torch

    with torch.inference_mode():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].to(torch.float32).contiguous().numpy()


def run_job(job: dict, models: dict, tokenizers: dict) -> None:
    import numpy as np

    model_path = Path(job['model']).resolve()
    out = Path(job['out'])
    started = time.time()
    key = (model_path, json.dumps(job.get('config'), sort_keys=True))
    if key not in models:
        models.clear()  # one model resident at a time keeps memory flat across many jobs
        models[key] = load_model(model_path, job.get('config'))
    model = models[key]
    if 'ids' in job:
        ids = [int(i) for i in job['ids']]
    elif 'text' in job:
        tok_path = Path(job.get('tokenizer') or model_path).resolve()
        if tok_path not in tokenizers:
            tokenizers[tok_path] = load_tokenizer(tok_path)
        ids = list(tokenizers[tok_path](job['text'], add_special_tokens=False)['input_ids'])
    else:
        raise SystemExit('reference: a job needs "ids" or "text"')
    if job.get('maxTokens'):
        ids = ids[: int(job['maxTokens'])]
    if not ids:
        raise SystemExit('reference: no tokens to run')
    vocab = model.config.get_text_config().vocab_size
    bad = [i for i in ids if not 0 <= i < vocab]
    if bad:
        raise SystemExit(f'reference: token ids {bad[:5]} outside the vocabulary of {vocab}')

    logits = teacher_forced_logits(model, ids)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f'.f32.tmp{os.getpid()}')
    logits.astype('<f4').tofile(tmp)
    os.replace(tmp, out.with_name(out.name + '.f32'))
    meta = {'model': str(model_path), 'ids': ids, 'shape': list(logits.shape), 'dtype': 'float32',
            'seconds': round(time.time() - started, 3)}
    out.with_name(out.name + '.json').write_text(json.dumps(meta) + '\n')
    top1 = np.argmax(logits, axis=1)
    print(f'reference: {model_path.name}: {len(ids)} positions x {logits.shape[1]} logits '
          f'in {meta["seconds"]} s (first predictions {top1[:8].tolist()})', file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description='teacher-forced float32 logits (see module docstring)')
    ap.add_argument('--jobs', type=Path, help='JSON file with one job or a list of jobs (default: stdin)')
    args = ap.parse_args()
    raw = args.jobs.read_text() if args.jobs else sys.stdin.read()
    jobs = json.loads(raw)
    if isinstance(jobs, dict):
        jobs = [jobs]
    import torch

    torch.manual_seed(0)
    models: dict = {}
    tokenizers: dict = {}
    for job in jobs:
        run_job(job, models, tokenizers)


if __name__ == '__main__':
    main()
