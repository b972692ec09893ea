#!/usr/bin/env python3
"""transformers' float reference for the vision fixtures (scripts/vision_fixtures.py).

  test/vision/vision_reference.py check DIR
      Loads DIR with AutoProcessor + AutoModelForImageTextToText, runs the chat template with
      one drawn image, checks the prompt's image tokens against the processor's tile grid and
      generates a few tokens greedily: the fixture is a model transformers runs end to end.

  test/vision/vision_reference.py features DIR REQUEST OUT
      REQUEST (JSON): {"images": [{"rgb": PATH, "width": W, "height": H}, ...]}, each PATH raw
      8-bit RGB, row-major (what the caller decoded, so both sides start from the same
      pixels). For each image, writes to OUT/<i>.pixels.f32 the processor's pixel_values
      [n, 3, T, T] (its PIL backend: LANCZOS, as SmolVLM's processor), to OUT/<i>.features.f32
      the model's get_image_features rows [n * tokensPerTile, textHidden], both little-endian
      float32, and OUT/reference.json: per image {tiles, rows, cols, featureRows}.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def load(model_dir: str):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor
    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
    return processor, model


def request_images(request_path: str):
    """The images a features REQUEST names, in order, as PIL RGB images."""
    from PIL import Image
    request = json.loads(Path(request_path).read_text())
    for i, spec in enumerate(request['images']):
        w, h = int(spec['width']), int(spec['height'])
        rgb = np.frombuffer(Path(spec['rgb']).read_bytes(), dtype=np.uint8)
        if rgb.size != w * h * 3:
            raise SystemExit(f'features: image {i}: {rgb.size} bytes, expected {w}x{h}x3')
        yield Image.fromarray(rgb.reshape(h, w, 3), 'RGB')


def check(model_dir: str) -> None:
    import torch
    from PIL import Image
    processor, model = load(model_dir)
    y, x = np.mgrid[0:100, 0:300]
    image = Image.fromarray(np.stack([x * 255 // 299, y * 255 // 99, (x * y) % 256], -1).astype(np.uint8))
    messages = [{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': 'What is in this image?'}]}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(text=prompt, images=[image], return_tensors='pt')
    n_tiles, rows, cols = processor.image_processor.get_number_of_image_patches(100, 300)
    ids = inputs['input_ids'][0].tolist()
    per_tile = processor.image_seq_len
    image_id = processor.tokenizer.convert_tokens_to_ids('<image>')
    if inputs['pixel_values'].shape[1] != n_tiles or ids.count(image_id) != n_tiles * per_tile:
        raise SystemExit(f'check: {n_tiles} tiles ({rows}x{cols}) expected, got pixel_values '
                         f'{tuple(inputs["pixel_values"].shape)} and {ids.count(image_id)} image tokens')
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=6, do_sample=False)
    print(json.dumps({'tiles': n_tiles, 'rows': rows, 'cols': cols, 'promptTokens': len(ids),
                      'generated': out[0, len(ids):].tolist()}))


def features(model_dir: str, request_path: str, out_dir: str) -> None:
    import torch
    processor, model = load(model_dir)
    out = Path(out_dir)
    results = []
    for i, image in enumerate(request_images(request_path)):
        batch = processor.image_processor(images=[image], return_tensors='pt', return_row_col_info=True)
        pixels = batch['pixel_values']  # [1, n, 3, T, T]
        with torch.no_grad():
            feats = model.model.get_image_features(pixel_values=pixels,
                                                   pixel_attention_mask=batch['pixel_attention_mask']).pooler_output[0]
        (out / f'{i}.pixels.f32').write_bytes(pixels[0].numpy().astype('<f4').tobytes())
        (out / f'{i}.features.f32').write_bytes(feats.numpy().astype('<f4').tobytes())
        results.append({'tiles': int(pixels.shape[1]), 'rows': int(batch['rows'][0][0]), 'cols': int(batch['cols'][0][0]),
                        'featureRows': int(feats.shape[0])})
    (out / 'reference.json').write_text(json.dumps({'images': results}))


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'check':
        check(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == 'features':
        features(*sys.argv[2:])
    else:
        raise SystemExit(__doc__)
