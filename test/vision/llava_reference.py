#!/usr/bin/env python3
"""transformers' float reference for the LLaVA fixture (scripts/llava_fixtures.py).

  test/vision/llava_reference.py features DIR REQUEST OUT
      REQUEST (JSON): {"images": [{"rgb": PATH, "width": W, "height": H}, ...]}, each PATH raw
      8-bit RGB, row-major (what the caller decoded, so both sides start from the same
      pixels). For each image, writes to OUT/<i>.pixels.f32 the processor's pixel_values
      [1, 3, S, S] (CLIPImageProcessor as AutoProcessor loads it: its PIL backend here), to
      OUT/<i>.features.f32 the model's get_image_features rows [tokens, textHidden], both
      little-endian float32, and OUT/reference.json: per image {featureRows, imageTokens}, the
      latter the <image> tokens LlavaProcessor writes for it in a prompt.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from vision_reference import load, request_images


def features(model_dir: str, request_path: str, out_dir: str) -> None:
    import torch
    processor, model = load(model_dir)
    out = Path(out_dir)
    results = []
    image_id = processor.tokenizer.convert_tokens_to_ids('<image>')
    for i, image in enumerate(request_images(request_path)):
        inputs = processor(text='<image>', images=[image], return_tensors='pt')
        pixels = inputs['pixel_values']
        with torch.no_grad():
            feats = model.model.get_image_features(pixel_values=pixels).pooler_output
        feats = torch.cat(list(feats), 0) if isinstance(feats, (list, tuple)) else feats.reshape(-1, feats.shape[-1])
        (out / f'{i}.pixels.f32').write_bytes(pixels.numpy().astype('<f4').tobytes())
        (out / f'{i}.features.f32').write_bytes(feats.numpy().astype('<f4').tobytes())
        results.append({'featureRows': int(feats.shape[0]),
                        'imageTokens': int((inputs['input_ids'][0] == image_id).sum())})
    (out / 'reference.json').write_text(json.dumps({'images': results}))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'features':
        features(*sys.argv[2:])
    else:
        raise SystemExit(__doc__)
