"""The LLaVA-1.6 (LLaVA-NeXT) fixture, written by vision_fixtures.py's write_vision_fixtures into its OUT.

* llava-next-tiny/: a random-weight LlavaNextForConditionalGeneration (CLIP vision encoder on
  every anyres tile, the MLP projector, image_newline, a Llama text model) saved by transformers
  (config.json with image_grid_pinpoints, vision_feature_layer -2, the 'default' select
  strategy; model.safetensors in float32), with its processor files as LlavaNextProcessor saves
  them (preprocessor_config.json: LlavaNextImageProcessor, bicubic, the same pinpoints, OpenAI
  CLIP's mean / std; processor_config.json: patch_size, num_additional_image_tokens 1, as
  llava-hf's LLaVA-1.6 folders have them) and llava-tiny's tokenizer and chat template (the
  SmolLM2 tokenizer plus <image> at 49152).

Small shapes so the tests are fast, none degenerate: a 3-layer CLIP of hidden 48 (unlike the
text model's 128, so a swapped projector fails) on 32-pixel tiles of 8-pixel patches (16
patches a tile, 4 x 4), intermediate 96; pinpoints of 1 x 2, 2 x 1, 2 x 2, 1 x 3 and 3 x 1
tiles (so landscape, portrait and square images choose different grids and most are
unpadded); image_newline drawn at the text embeddings' scale, so a missing newline row shows.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from llava_fixtures import (CHAT_TEMPLATE, CLIP_MEAN, CLIP_STD, IMAGE_TOKEN_ID, TEXT, VOCAB, patches, vision_weights,
                            write_tokenizer)
from vision_hf import publish_folder, save_model, text_weights

NAME = 'llava-next-tiny'
VISION = dict(hidden=48, layers=3, heads=3, inter=96, patch=8, image=32, eps=1e-5, seed=61)
FEATURE_LAYER = -2
# (height, width) pairs, as LlavaNextConfig and LlavaNextImageProcessor take them.
PINPOINTS = [[32, 64], [64, 32], [64, 64], [32, 96], [96, 32]]


def config() -> dict:
    v, t = VISION, TEXT
    return {
        'architectures': ['LlavaNextForConditionalGeneration'], 'model_type': 'llava_next',
        'image_token_id': IMAGE_TOKEN_ID, 'image_seq_length': patches(VISION), 'projector_hidden_act': 'gelu',
        'vision_feature_select_strategy': 'default', 'vision_feature_layer': FEATURE_LAYER,
        'image_grid_pinpoints': PINPOINTS, 'multimodal_projector_bias': True, 'tie_word_embeddings': False,
        'vision_config': {'model_type': 'clip_vision_model', 'hidden_size': v['hidden'],
                          'intermediate_size': v['inter'], 'num_hidden_layers': v['layers'],
                          'num_attention_heads': v['heads'], 'num_channels': 3, 'image_size': v['image'],
                          'patch_size': v['patch'], 'hidden_act': 'quick_gelu', 'layer_norm_eps': v['eps'],
                          'projection_dim': 32},
        'text_config': {'model_type': 'llama', 'vocab_size': VOCAB, 'hidden_size': t['hidden'],
                        'intermediate_size': t['inter'], 'num_hidden_layers': t['layers'],
                        'num_attention_heads': t['heads'], 'num_key_value_heads': t['kv_heads'],
                        'head_dim': t['head_dim'], 'hidden_act': 'silu', 'max_position_embeddings': 8192,
                        'rms_norm_eps': 1e-5, 'rope_theta': 100000.0, 'tie_word_embeddings': False,
                        'bos_token_id': 1, 'eos_token_id': 2, 'pad_token_id': 2, 'attention_bias': False,
                        'mlp_bias': False},
    }


def write_llava_next_tiny(out: Path, tokenizer_gguf: Path, normal, hf_weights, publish) -> Path:
    from transformers import (LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextImageProcessorPil,
                              LlavaNextProcessor, PreTrainedTokenizerFast)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    weights = {**vision_weights(normal, VISION, TEXT['hidden']),
               'model.image_newline': normal(VISION['seed'], 'newline', (TEXT['hidden'],), 1.0),
               **text_weights(hf_weights, TEXT, VOCAB, 'model.language_model.')}
    save_model(NAME, lambda: LlavaNextForConditionalGeneration(LlavaNextConfig(**config())), weights, tmp)
    write_tokenizer(tmp, tokenizer_gguf)
    edge = VISION['image']
    image_processor = LlavaNextImageProcessorPil(
        do_resize=True, size={'shortest_edge': edge}, resample=3, do_center_crop=True,
        crop_size={'height': edge, 'width': edge}, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
        image_mean=CLIP_MEAN, image_std=CLIP_STD, do_convert_rgb=True, do_pad=True, image_grid_pinpoints=PINPOINTS)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tmp))
    LlavaNextProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=VISION['patch'],
                       vision_feature_select_strategy='default', num_additional_image_tokens=1,
                       chat_template=CHAT_TEMPLATE).save_pretrained(str(tmp))
    return publish_folder(out, NAME, tmp, image_processor, publish)


def write_llava_next_fixtures(out: Path, log, tokenizer_gguf: Path, normal, hf_weights, publish) -> list[dict]:
    """Writes the LLaVA-1.6 fixture; returns its manifest entry (vision_fixtures.py's shape)."""
    write_llava_next_tiny(out, tokenizer_gguf, normal, hf_weights, publish)
    log(f'{NAME}/')
    return [{'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'llava_next', 'weightType': 'F32',
             'tied': False, 'task': 'vision'}]
