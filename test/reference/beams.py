#!/usr/bin/env python3
"""Reference beam search for Prism's beam-search test: Hugging Face transformers'
generate(num_beams=W) on the same float32 weights (test/reference/logits.py loads them).

Input: a JSON list of jobs on stdin:
  {"model": "path/to/hf-dir" | "path/to/file.gguf", "ids": [prompt token ids],
   "num_beams": W, "num_return_sequences": n, "max_new_tokens": m, "min_new_tokens": k,
   "length_penalty": 1.0, "early_stopping": false | true | "never",
   "eos_token_id": [ids that end a beam] (may be empty: nothing ends a beam but the length)}
Output: one JSON line, a list with per job {"sequences": [[output ids]], "scores": [beam scores]},
the n returned beams, best first (the prompt and any padding removed).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from logits import load_model  # noqa: E402


def run_job(job: dict, models: dict) -> dict:
    import torch

    path = Path(job['model']).resolve()
    if path not in models:
        models.clear()
        models[path] = load_model(path)
    model = models[path]
    ids = torch.tensor([job['ids']], dtype=torch.long)
    eos = job.get('eos_token_id') or None
    # No pad token: padding a finished beam with an end token keeps the returned rows apart.
    pad = (eos[0] if eos else 0)
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            num_beams=job['num_beams'],
            num_return_sequences=job['num_return_sequences'],
            max_new_tokens=job['max_new_tokens'],
            min_new_tokens=job.get('min_new_tokens', 0),
            length_penalty=job.get('length_penalty', 1.0),
            early_stopping=job.get('early_stopping', False),
            eos_token_id=eos,
            pad_token_id=pad,
            output_scores=True,
            return_dict_in_generate=True,
        )
    prompt_len = ids.shape[1]
    sequences = []
    for row in out.sequences.tolist():
        gen = row[prompt_len:]
        # A beam ends at its first end token (what follows is padding).
        if eos:
            for i, t in enumerate(gen):
                if t in eos:
                    gen = gen[: i + 1]
                    break
        sequences.append(gen)
    return {'sequences': sequences, 'scores': out.sequences_scores.tolist()}


def main() -> None:
    import torch

    torch.manual_seed(0)
    jobs = json.loads(sys.stdin.read())
    models: dict = {}
    print(json.dumps([run_job(job, models) for job in jobs]))


if __name__ == '__main__':
    main()
