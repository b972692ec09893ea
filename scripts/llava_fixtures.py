"""The LLaVA-1.5 fixtures, written by vision_fixtures.py's write_vision_fixtures into its OUT.

* llava-tiny/: a random-weight LlavaForConditionalGeneration (LLaVA-1.5's architecture: CLIP
  vision encoder, the MLP projector linear_1 -> GELU -> linear_2, a Llama text model) saved by
  transformers (config.json with vision_feature_layer -2 and the 'default' select strategy,
  model.safetensors in float32), with its processor files as LlavaProcessor saves them
  (preprocessor_config.json: CLIPImageProcessor, bicubic resize of the shortest edge, center
  crop, OpenAI CLIP's mean / std; processor_config.json: patch_size, num_additional_image_tokens
  1, as llava-hf's folders have them) and a tokenizer: the default model's SmolLM2 tokenizer
  (read from its GGUF by transformers) plus <image> at id 49152, LLaVA-1.5's chat template.

Shapes are small but nothing is degenerate: a 3-layer CLIP of hidden 64 on 64-pixel images of
8-pixel patches (64 patches + the class token; hidden_states[-2] is after 2 layers, so the
last layer is never run), intermediate 128 (unlike the hidden size, so a swapped fc1 / fc2
fails), 64 image tokens per image; a 2-layer GQA Llama of hidden 128.

Beside the folder, llama.cpp's twin of the very same weights: llava-tiny-f32.gguf (the text
model as convert_hf_to_gguf.py writes LlavaForConditionalGeneration's: a llama GGUF whose
vocabulary holds <image> as a control token) and mmproj-llava-tiny-f32.gguf as llama.cpp's
image-encoder converter for LLaVA (tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py,
--use-f32 --projector-type mlp) writes it: architecture clip, projector type mlp,
clip.vision.feature_layer [2] and only the layers up to it, the v.* CLIP tensors with that
converter's names (fc1 stored as ffn_down, fc2 as ffn_up), mm.0.* / mm.2.* for the projector,
no post LayerNorm; the patch embedding and the projector's matrices in F16 (that converter
always stores 4-D and projector matrices so), the rest F32.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from vision_gguf import write_gguf, write_text_gguf
from vision_hf import default_tokenizer, encoder_layer_weights, publish_folder, save_model, text_weights

NAME = 'llava-tiny'
VISION = dict(hidden=64, layers=3, heads=4, inter=128, patch=8, image=64, eps=1e-5, seed=51)
FEATURE_LAYER = -2
TEXT = dict(arch='llama', hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, inter=256, tied=False, seed=52)
IMAGE_TOKEN = '<image>'
IMAGE_TOKEN_ID = 49152
VOCAB = 49153
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

# LLaVA-1.5's chat template (llava-hf's), its images first in each message, then its text.
CHAT_TEMPLATE = ("{% for message in messages %}{% if message['role'] != 'system' %}"
                 "{{ message['role'] | upper }}{{ ': ' }}{% endif %}"
                 "{% for part in message['content'] %}{% if part['type'] == 'image' %}{{ '<image>\n' }}{% endif %}"
                 "{% endfor %}{% for part in message['content'] %}{% if part['type'] == 'text' %}"
                 "{{ part['text'] + ' ' }}{% endif %}{% endfor %}{% endfor %}"
                 "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def patches(vision: dict = VISION) -> int:
    return (vision['image'] // vision['patch']) ** 2


def image_tokens() -> int:
    return patches()  # 'default': the class token's row is dropped


def vision_weights(normal, vision: dict = VISION, text_hidden: int = TEXT['hidden']) -> dict[str, np.ndarray]:
    """The CLIP tower and projector under transformers' module names (model.vision_tower.*);
    `vision` and `text_hidden` give the shapes (llava_next_fixtures.py draws its own)."""
    s, d, inter, p = vision['seed'], vision['hidden'], vision['inter'], vision['patch']
    pre = 'model.vision_tower.'
    w = {pre + 'embeddings.class_embedding': normal(s, 'cls', (d,), 0.5),
         pre + 'embeddings.patch_embedding.weight': normal(s, 'patch', (d, 3, p, p), 1 / np.sqrt(3 * p * p)),
         pre + 'embeddings.position_embedding.weight': normal(s, 'pos', (patches(vision) + 1, d), 0.5),
         pre + 'pre_layrnorm.weight': normal(s, 'pre', (d,), 0.1, 1.0),
         pre + 'pre_layrnorm.bias': normal(s, 'preb', (d,), 0.1),
         pre + 'post_layernorm.weight': normal(s, 'post', (d,), 0.1, 1.0),
         pre + 'post_layernorm.bias': normal(s, 'postb', (d,), 0.1)}
    for i in range(vision['layers']):
        w.update(encoder_layer_weights(normal, s, f'{pre}encoder.layers.{i}.', d, inter))
    h = text_hidden
    mm = 'model.multi_modal_projector.'
    w[mm + 'linear_1.weight'] = normal(s, 'mm1', (h, d), 1 / np.sqrt(d))
    w[mm + 'linear_1.bias'] = normal(s, 'mm1b', (h,), 0.2)
    # Unit-scale rows out, like the text model's token embeddings.
    w[mm + 'linear_2.weight'] = normal(s, 'mm2', (h, h), 1 / np.sqrt(h))
    w[mm + 'linear_2.bias'] = normal(s, 'mm2b', (h,), 0.1)
    return w


def config() -> dict:
    v, t = VISION, TEXT
    return {
        'architectures': ['LlavaForConditionalGeneration'], 'model_type': 'llava',
        'image_token_id': IMAGE_TOKEN_ID, 'image_seq_length': image_tokens(), 'projector_hidden_act': 'gelu',
        'vision_feature_select_strategy': 'default', 'vision_feature_layer': FEATURE_LAYER,
        'multimodal_projector_bias': True, 'tie_word_embeddings': False,
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


def write_tokenizer(dst: Path, tokenizer_gguf: Path) -> None:
    """The SmolLM2 tokenizer from the default model's GGUF, with <image> added at 49152."""
    from tokenizers import AddedToken
    tok = default_tokenizer(tokenizer_gguf)
    tok.add_special_tokens({'additional_special_tokens': [AddedToken(IMAGE_TOKEN, normalized=False, special=True)]})
    if tok.convert_tokens_to_ids(IMAGE_TOKEN) != IMAGE_TOKEN_ID:
        raise SystemExit(f'make-fixtures: {IMAGE_TOKEN} got id {tok.convert_tokens_to_ids(IMAGE_TOKEN)}')
    tok.save_pretrained(str(dst))


def write_llava_tiny(out: Path, tokenizer_gguf: Path, normal, hf_weights, publish) -> Path:
    from transformers import (CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor,
                              PreTrainedTokenizerFast)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    # LLaVA's module names for the text model: model.language_model.*, lm_head.
    weights = {**vision_weights(normal), **text_weights(hf_weights, TEXT, VOCAB, 'model.language_model.')}
    save_model(NAME, lambda: LlavaForConditionalGeneration(LlavaConfig(**config())), weights, tmp)
    write_tokenizer(tmp, tokenizer_gguf)
    edge = VISION['image']
    image_processor = CLIPImageProcessorPil(
        do_resize=True, size={'shortest_edge': edge}, resample=3, do_center_crop=True,
        crop_size={'height': edge, 'width': edge}, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
        image_mean=CLIP_MEAN, image_std=CLIP_STD, do_convert_rgb=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tmp))
    LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=VISION['patch'],
                   vision_feature_select_strategy='default', num_additional_image_tokens=1,
                   chat_template=CHAT_TEMPLATE).save_pretrained(str(tmp))
    return publish_folder(out, NAME, tmp, image_processor, publish)


def feature_layers() -> int:
    """The converter's clip.vision.feature_layer: vision_feature_layer made non-negative."""
    n = VISION['layers']
    return FEATURE_LAYER if FEATURE_LAYER >= 0 else n + FEATURE_LAYER + 1


def mmproj_name(hf: str) -> str | None:
    """The legacy converter's name for a tensor (None: not written)."""
    pre = 'model.vision_tower.'
    if hf.startswith(pre + 'encoder.layers.'):
        bid, rest = hf[len(pre + 'encoder.layers.'):].split('.', 1)
        if int(bid) >= feature_layers():
            return None  # the converter keeps layers[:max(feature_layers)]
        part, kind = rest.rsplit('.', 1)
        names = {'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
                 'self_attn.out_proj': 'attn_out', 'layer_norm1': 'ln1', 'layer_norm2': 'ln2',
                 'mlp.fc1': 'ffn_down', 'mlp.fc2': 'ffn_up'}  # that converter's (swapped) names
        return f'v.blk.{bid}.{names[part]}.{kind}'
    return {pre + 'embeddings.class_embedding': 'v.class_embd',
            pre + 'embeddings.patch_embedding.weight': 'v.patch_embd.weight',
            pre + 'embeddings.position_embedding.weight': 'v.position_embd.weight',
            pre + 'pre_layrnorm.weight': 'v.pre_ln.weight', pre + 'pre_layrnorm.bias': 'v.pre_ln.bias',
            pre + 'post_layernorm.weight': None, pre + 'post_layernorm.bias': None,
            'model.multi_modal_projector.linear_1.weight': 'mm.0.weight',
            'model.multi_modal_projector.linear_1.bias': 'mm.0.bias',
            'model.multi_modal_projector.linear_2.weight': 'mm.2.weight',
            'model.multi_modal_projector.linear_2.bias': 'mm.2.bias'}[hf]


def write_mmproj_gguf(out: Path, normal, publish) -> str:
    import gguf
    v = VISION

    def fill(w) -> None:
        w.add_bool('clip.has_text_encoder', False)
        w.add_bool('clip.has_vision_encoder', True)
        w.add_bool('clip.has_llava_projector', True)
        w.add_file_type(0)
        w.add_name(f'prism-fixture-{NAME}')
        w.add_description('image encoder for LLaVA')
        w.add_string('clip.projector_type', 'mlp')
        w.add_uint32('clip.vision.image_size', v['image'])
        w.add_uint32('clip.vision.patch_size', v['patch'])
        w.add_uint32('clip.vision.embedding_length', v['hidden'])
        w.add_uint32('clip.vision.feed_forward_length', v['inter'])
        w.add_uint32('clip.vision.projection_dim', 32)
        w.add_uint32('clip.vision.attention.head_count', v['heads'])
        w.add_float32('clip.vision.attention.layer_norm_epsilon', v['eps'])
        w.add_uint32('clip.vision.block_count', feature_layers())
        w.add_array('clip.vision.feature_layer', [feature_layers()])
        w.add_array('clip.vision.image_mean', CLIP_MEAN)
        w.add_array('clip.vision.image_std', CLIP_STD)
        w.add_bool('clip.use_gelu', False)  # CLIP's quick_gelu
        for hf, arr in vision_weights(normal).items():
            name = mmproj_name(hf)
            if name is None:
                continue
            f16 = arr.ndim == 4 or name in ('mm.0.weight', 'mm.2.weight')
            w.add_tensor(name, arr.astype(np.float16 if f16 else np.float32),
                         raw_dtype=gguf.GGMLQuantizationType.F16 if f16 else gguf.GGMLQuantizationType.F32)

    return write_gguf(out, f'mmproj-{NAME}-f32.gguf', 'clip', fill, publish)


def write_llava_text_gguf(out: Path, hf_weights, tokenizer_kvs: list[tuple], llama_hf_to_gguf, publish) -> str:
    """The text model as convert_hf_to_gguf.py writes LLaVA's: a llama GGUF (F32), its
    vocabulary the SmolLM2 one plus <image> (a control token), LLaVA-1.5's chat template."""
    return write_text_gguf(out, NAME, TEXT, llama_hf_to_gguf(hf_weights(TEXT, VOCAB), TEXT, TEXT['tied']),
                           tokenizer_kvs, [IMAGE_TOKEN], {'tokenizer.chat_template': CHAT_TEMPLATE}, publish)


def write_llava_fixtures(out: Path, log, tokenizer_gguf: Path, normal, hf_weights, publish, tokenizer_kvs: list[tuple],
                         llama_hf_to_gguf) -> list[dict]:
    """Writes the LLaVA fixtures; returns their manifest entries (vision_fixtures.py's shape)."""
    write_llava_tiny(out, tokenizer_gguf, normal, hf_weights, publish)
    log(f'{NAME}/')
    text = write_llava_text_gguf(out, hf_weights, tokenizer_kvs, llama_hf_to_gguf, publish)
    log(text)
    mmproj = write_mmproj_gguf(out, normal, publish)
    log(mmproj)
    return [{'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'llava', 'weightType': 'F32',
             'tied': False, 'task': 'vision'},
            {'name': text[:-5], 'path': text, 'format': 'gguf', 'architecture': 'llama', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME},
            {'name': mmproj[:-5], 'path': mmproj, 'format': 'gguf', 'architecture': 'llava', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME}]
