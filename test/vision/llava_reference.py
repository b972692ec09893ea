#!/usr/bin/env python3
"""transformers' float reference for the LLaVA fixtures (scripts/llava_fixtures.py, llava_next_fixtures.py).

  test/vision/llava_reference.py features DIR REQUEST OUT
      REQUEST (JSON): {"images": [{"rgb": PATH, "width": W, "height": H}, ...]}, each PATH raw
      8-bit RGB, row-major (what the caller decoded, so both sides start from the same
      pixels). For each image, writes to OUT/<i>.pixels.f32 the processor's pixel_values
      ([1, 3, S, S] from CLIPImageProcessor; LLaVA-1.6's LlavaNextImageProcessor: [1, tiles, 3,
      S, S], the base tile first; as AutoProcessor loads them: their PIL backends here), to
      OUT/<i>.features.f32 the model's get_image_features rows [tokens, textHidden] (LLaVA-1.6:
      pack_image_features' rows, unpadded, image_newline after each grid row), both
      little-endian float32, and OUT/reference.json: per image {featureRows, imageTokens,
      tiles}, imageTokens the <image> tokens the processor writes for it in a prompt.
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
        # LLaVA-1.6 packs the tiles' rows by the image's size.
        sizes = {'image_sizes': inputs['image_sizes']} if 'image_sizes' in inputs else {}
        with torch.no_grad():
            feats = model.model.get_image_features(pixel_values=pixels, **sizes).pooler_output
        feats = torch.cat(list(feats), 0) if isinstance(feats, (list, tuple)) else feats.reshape(-1, feats.shape[-1])
        (out / f'{i}.pixels.f32').write_bytes(pixels.numpy().astype('<f4').tobytes())
        (out / f'{i}.features.f32').write_bytes(feats.numpy().astype('<f4').tobytes())
        results.append({'featureRows': int(feats.shape[0]),
                        'imageTokens': int((inputs['input_ids'][0] == image_id).sum()),
                        'tiles': int(pixels.numel() // (3 * pixels.shape[-1] * pixels.shape[-2]))})
    (out / 'reference.json').write_text(json.dumps({'images': results}))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'features':
        features(*sys.argv[2:])
    else:
        raise SystemExit(__doc__)
