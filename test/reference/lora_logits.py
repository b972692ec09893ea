#!/usr/bin/env python3
"""Float reference for Prism's LoRA numerics test: teacher-forced float32 logits of a base
model with a PEFT adapter applied (transformers + peft, CPU).

The base is loaded exactly as test/reference/logits.py loads it (a GGUF file dequantized
to float with llama.cpp's q/k permutation undone, or a safetensors folder), then
`peft.PeftModel.from_pretrained(base, adapter_dir)` applies the adapter the way PEFT
users run it. So the only differences from Prism are Prism's arithmetic and its handling
of the adapter (key mapping, ranks and scales, GGUF row permutation of B).

Input: a JSON list of jobs in the file given by --jobs, each
  {"model": path, "adapter": dir, "ids": [...] | "text": "...", "tokenizer"?: path,
   "maxTokens"?: n, "out": "path/prefix"}
Output per job: <out>.f32 (raw little-endian float32 [T x V]) and <out>.json (written last).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logits import load_model, load_tokenizer, teacher_forced_logits  # noqa: E402

REFERENCE_VERSION = 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--jobs', type=Path, required=True)
    args = ap.parse_args()
    jobs = json.loads(args.jobs.read_text())
    import torch
    from peft import PeftModel

    torch.manual_seed(0)
    tokenizers: dict = {}
    for job in jobs:
        started = time.time()
        model_path = Path(job['model']).resolve()
        model = PeftModel.from_pretrained(load_model(model_path), job['adapter'])
        model.eval()
        if 'ids' in job:
            ids = [int(i) for i in job['ids']]
        else:
            tok_path = Path(job.get('tokenizer') or model_path).resolve()
            if tok_path not in tokenizers:
                tokenizers[tok_path] = load_tokenizer(tok_path)
            ids = list(tokenizers[tok_path](job['text'], add_special_tokens=False)['input_ids'])
        if job.get('maxTokens'):
            ids = ids[: int(job['maxTokens'])]
        logits = teacher_forced_logits(model, ids)
        out = Path(job['out'])
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f'.f32.tmp{os.getpid()}')
        logits.astype('<f4').tofile(tmp)
        os.replace(tmp, out.with_name(out.name + '.f32'))
        meta = {'model': str(model_path), 'adapter': job['adapter'], 'ids': ids, 'shape': list(logits.shape),
                'dtype': 'float32', 'seconds': round(time.time() - started, 3)}
        out.with_name(out.name + '.json').write_text(json.dumps(meta) + '\n')
        print(f'lora reference: {model_path.name} + {Path(job["adapter"]).name}: {len(ids)} positions '
              f'in {meta["seconds"]} s', file=sys.stderr)


if __name__ == '__main__':
    main()
