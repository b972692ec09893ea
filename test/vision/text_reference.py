"""The float reference for smolvlm-tiny's text model: transformers' Idefics3 (the folder's
weights) run on token ids alone, no image.

  text_reference.py logits MODEL_DIR IDS_JSON OUT_F32
      writes the logits of every position, [len(ids), vocab] float32 little-endian.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from vision_reference import load


def logits(model_dir: str, ids_path: str, out_path: str) -> None:
    import torch
    _, model = load(model_dir)
    ids = json.loads(Path(ids_path).read_text())
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long)).logits[0]
    Path(out_path).write_bytes(out.numpy().astype('<f4').tobytes())


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'logits':
        logits(*sys.argv[2:])
    else:
        raise SystemExit(__doc__)
