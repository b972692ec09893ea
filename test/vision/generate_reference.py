#!/usr/bin/env python3
"""transformers' Idefics3 run on one chat with one image, or on a text prompt holding it: the
float reference of test/vision/vision-generate.test.ts.

  test/vision/generate_reference.py DIR RGB WIDTH HEIGHT TEXT MAX_NEW [FORM]
      RGB: raw 8-bit RGB bytes, row-major (the pixels the test hands Prism too). FORM `chat`
      (the default) renders the folder's chat template with the image and TEXT; FORM `text`
      takes TEXT as the prompt itself, with the processor's `<image>` where the image goes (what
      TGI's `![](url)` in `inputs` stands for). Runs the processor on it and prints one JSON
      line: the prompt's input_ids, the argmax of the logits at every prompt position
      (teacher-forced top-1), each next prompt token's logprob, and MAX_NEW greedily
      generated ids.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(model_dir: str, rgb_path: str, width: str, height: str, text: str, max_new: str, form: str = 'chat') -> None:
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    w, h = int(width), int(height)
    rgb = np.frombuffer(Path(rgb_path).read_bytes(), dtype=np.uint8).reshape(h, w, 3)
    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
    if form == 'chat':
        messages = [{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': text}]}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
    elif form == 'text':
        prompt = text
    else:
        raise SystemExit(f'FORM must be chat or text, got {form!r}')
    inputs = processor(text=prompt, images=[Image.fromarray(rgb, 'RGB')], return_tensors='pt')
    with torch.no_grad():
        logits = model(**inputs).logits[0]
        out = model.generate(**inputs, max_new_tokens=int(max_new), do_sample=False)
    ids = inputs['input_ids'][0].tolist()
    # logprobs[i]: log p(ids[i + 1] | ids[..i]), what the engine reports for prompt token i + 1.
    logprobs = torch.log_softmax(logits[:-1], -1).gather(1, inputs['input_ids'][0, 1:, None])[:, 0]
    print(json.dumps({'ids': ids, 'top1': logits.argmax(-1).tolist(), 'logprobs': logprobs.tolist(),
                      'generated': out[0, len(ids):].tolist()}))


if __name__ == '__main__':
    if len(sys.argv) not in (7, 8):
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
