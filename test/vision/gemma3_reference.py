#!/usr/bin/env python3
"""transformers' float reference for the Gemma 3 vision fixture (scripts/gemma3_vision_fixtures.py).

  test/vision/gemma3_reference.py features DIR REQUEST OUT
      As llava_reference.py's: per image OUT/<i>.pixels.f32 (Gemma3ImageProcessor's
      pixel_values [1, 3, S, S], its PIL backend), OUT/<i>.features.f32 (get_image_features'
      rows [mm_tokens_per_image, textHidden]) and OUT/reference.json ({featureRows} per image).

  test/vision/gemma3_reference.py DIR RGB WIDTH HEIGHT TEXT MAX_NEW [FORM]
      generate_reference.py's run for Gemma 3: the folder's chat template with the image and
      TEXT, each <start_of_image> replaced by Gemma3Processor's full_image_sequence
      ("\\n\\n<start_of_image>" + mm_tokens_per_image x <image_soft_token> + "<end_of_image>\\n\\n")
      and the joined text tokenized, as Gemma3Processor does (its tokenizer needs Gemma's own
      special-token attributes, which the fixture's SmolLM2 tokenizer lacks, so its two steps are
      spelled out here); token_type_ids 1 at the soft tokens. FORM `chat` (the default) runs
      Gemma3ForConditionalGeneration with them (an image's tokens attend both ways); `causal`
      leaves token_type_ids out (all causal), the reference an engine without the bidirectional
      mask would match. Prints generate_reference.py's JSON line.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from vision_reference import request_images


def load(model_dir: str):
    import torch
    from transformers import AutoTokenizer, Gemma3ForConditionalGeneration, Gemma3ImageProcessorPil
    model = Gemma3ForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
    return AutoTokenizer.from_pretrained(model_dir), Gemma3ImageProcessorPil.from_pretrained(model_dir), model


def features(model_dir: str, request_path: str, out_dir: str) -> None:
    import torch
    _, image_processor, model = load(model_dir)
    out = Path(out_dir)
    results = []
    for i, image in enumerate(request_images(request_path)):
        pixels = image_processor(images=[image], return_tensors='pt')['pixel_values']
        with torch.no_grad():
            feats = model.model.get_image_features(pixel_values=pixels).pooler_output
        feats = feats.reshape(-1, feats.shape[-1])
        (out / f'{i}.pixels.f32').write_bytes(pixels.numpy().astype('<f4').tobytes())
        (out / f'{i}.features.f32').write_bytes(feats.numpy().astype('<f4').tobytes())
        results.append({'featureRows': int(feats.shape[0])})
    (out / 'reference.json').write_text(json.dumps({'images': results}))


def generate(model_dir: str, rgb_path: str, width: str, height: str, text: str, max_new: str, form: str = 'chat') -> None:
    import torch
    from PIL import Image
    if form not in ('chat', 'causal'):
        raise SystemExit(f'FORM must be chat or causal, got {form!r}')
    tokenizer, image_processor, model = load(model_dir)
    cfg = model.config
    w, h = int(width), int(height)
    rgb = np.frombuffer(Path(rgb_path).read_bytes(), dtype=np.uint8).reshape(h, w, 3)
    messages = [{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': text}]}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    boi, eoi, soft = (tokenizer.convert_ids_to_tokens(i) for i in (cfg.boi_token_id, cfg.eoi_token_id, cfg.image_token_id))
    full_image_sequence = f'\n\n{boi}{soft * cfg.mm_tokens_per_image}{eoi}\n\n'
    prompt = prompt.replace(boi, full_image_sequence)
    input_ids = tokenizer(prompt, add_special_tokens=False, return_tensors='pt')['input_ids']
    pixels = image_processor(images=[Image.fromarray(rgb, 'RGB')], return_tensors='pt')['pixel_values']
    inputs = {'input_ids': input_ids, 'attention_mask': torch.ones_like(input_ids), 'pixel_values': pixels}
    if form == 'chat':
        inputs['token_type_ids'] = (input_ids == cfg.image_token_id).long()
    with torch.no_grad():
        logits = model(**inputs).logits[0]
        out = model.generate(**inputs, max_new_tokens=int(max_new), do_sample=False)
    ids = input_ids[0].tolist()
    logprobs = torch.log_softmax(logits[:-1], -1).gather(1, input_ids[0, 1:, None])[:, 0]
    print(json.dumps({'ids': ids, 'top1': logits.argmax(-1).tolist(), 'logprobs': logprobs.tolist(),
                      'generated': out[0, len(ids):].tolist()}))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'features':
        features(*sys.argv[2:])
    elif len(sys.argv) in (7, 8):
        generate(*sys.argv[1:])
    else:
        raise SystemExit(__doc__)
