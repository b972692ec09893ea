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

import json
import tempfile
from pathlib import Path

import numpy as np

NAME = 'llava-tiny'
VISION = dict(hidden=64, layers=3, heads=4, inter=128, patch=8, image=64, eps=1e-5, seed=51)
FEATURE_LAYER = -2
TEXT = dict(arch='llama', hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, inter=256, tied=False, seed=52)
QK_GAIN = 2.0
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


def patches() -> int:
    return (VISION['image'] // VISION['patch']) ** 2


def image_tokens() -> int:
    return patches()  # 'default': the class token's row is dropped


def vision_weights(normal) -> dict[str, np.ndarray]:
    """The CLIP tower and projector under transformers' module names (model.vision_tower.*)."""
    s, d, inter, p = VISION['seed'], VISION['hidden'], VISION['inter'], VISION['patch']
    pre = 'model.vision_tower.'
    w = {pre + 'embeddings.class_embedding': normal(s, 'cls', (d,), 0.5),
         pre + 'embeddings.patch_embedding.weight': normal(s, 'patch', (d, 3, p, p), 1 / np.sqrt(3 * p * p)),
         pre + 'embeddings.position_embedding.weight': normal(s, 'pos', (patches() + 1, d), 0.5),
         pre + 'pre_layrnorm.weight': normal(s, 'pre', (d,), 0.1, 1.0),
         pre + 'pre_layrnorm.bias': normal(s, 'preb', (d,), 0.1),
         pre + 'post_layernorm.weight': normal(s, 'post', (d,), 0.1, 1.0),
         pre + 'post_layernorm.bias': normal(s, 'postb', (d,), 0.1)}
    for i in range(VISION['layers']):
        q = f'{pre}encoder.layers.{i}.'
        for part, gain in (('self_attn.q_proj', QK_GAIN), ('self_attn.k_proj', QK_GAIN),
                           ('self_attn.v_proj', 1.0), ('self_attn.out_proj', 0.5)):
            w[q + part + '.weight'] = normal(s, q + part, (d, d), gain / np.sqrt(d))
            w[q + part + '.bias'] = normal(s, q + part + 'b', (d,), 0.2)
        w[q + 'mlp.fc1.weight'] = normal(s, q + 'fc1', (inter, d), 1 / np.sqrt(d))
        w[q + 'mlp.fc1.bias'] = normal(s, q + 'fc1b', (inter,), 0.2)
        w[q + 'mlp.fc2.weight'] = normal(s, q + 'fc2', (d, inter), 0.5 / np.sqrt(inter))
        w[q + 'mlp.fc2.bias'] = normal(s, q + 'fc2b', (d,), 0.2)
        for ln in ('layer_norm1', 'layer_norm2'):
            w[q + ln + '.weight'] = normal(s, q + ln, (d,), 0.1, 1.0)
            w[q + ln + '.bias'] = normal(s, q + ln + 'b', (d,), 0.1)
    h = TEXT['hidden']
    mm = 'model.multi_modal_projector.'
    w[mm + 'linear_1.weight'] = normal(s, 'mm1', (h, d), 1 / np.sqrt(d))
    w[mm + 'linear_1.bias'] = normal(s, 'mm1b', (h,), 0.2)
    # Unit-scale rows out, like the text model's token embeddings.
    w[mm + 'linear_2.weight'] = normal(s, 'mm2', (h, h), 1 / np.sqrt(h))
    w[mm + 'linear_2.bias'] = normal(s, 'mm2b', (h,), 0.1)
    return w


def text_weights(hf_weights) -> dict[str, np.ndarray]:
    """make-fixtures.py's Llama weights under LLaVA's module names (model.language_model.*, lm_head)."""
    w = hf_weights(TEXT, VOCAB)
    return {('model.language_model.' + k[len('model.'):]) if k.startswith('model.') else k: v for k, v in w.items()}


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
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(tokenizer_gguf.parent), gguf_file=tokenizer_gguf.name)
    if len(tok) != 49152:
        raise SystemExit(f'make-fixtures: the default tokenizer has {len(tok)} tokens, expected 49152')
    tok.add_special_tokens({'additional_special_tokens': [AddedToken(IMAGE_TOKEN, normalized=False, special=True)]})
    if tok.convert_tokens_to_ids(IMAGE_TOKEN) != IMAGE_TOKEN_ID:
        raise SystemExit(f'make-fixtures: {IMAGE_TOKEN} got id {tok.convert_tokens_to_ids(IMAGE_TOKEN)}')
    tok.save_pretrained(str(dst))


def write_llava_tiny(out: Path, tokenizer_gguf: Path, normal, hf_weights, publish) -> Path:
    import torch
    from transformers import (CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor,
                              PreTrainedTokenizerFast)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    weights = {**vision_weights(normal), **text_weights(hf_weights)}
    torch.manual_seed(0)  # the module init is overwritten below; seeded so nothing is left to chance
    model = LlavaForConditionalGeneration(LlavaConfig(**config())).to(torch.float32)
    expected = set(model.state_dict())
    if expected != set(weights):
        raise SystemExit(f'make-fixtures: {NAME} tensors differ from transformers\' model: '
                         f'missing {sorted(expected - set(weights))}, extra {sorted(set(weights) - expected)}')
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    model.save_pretrained(str(tmp))
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
    # As llava-hf's folders are laid out: the image processor in preprocessor_config.json.
    image_processor.save_pretrained(str(tmp))
    processor_cfg = json.loads((tmp / 'processor_config.json').read_text())
    processor_cfg.pop('image_processor', None)
    (tmp / 'processor_config.json').write_text(json.dumps(processor_cfg, indent=2) + '\n')
    for f in ('preprocessor_config.json', 'processor_config.json', 'config.json', 'model.safetensors'):
        if not (tmp / f).exists():
            raise SystemExit(f'make-fixtures: {NAME}/{f} was not written')
    publish(tmp, out / NAME)
    return out / NAME


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


def write_mmproj_gguf(out: Path, normal, write_gguf, publish) -> str:
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


def write_text_gguf(out: Path, hf_weights, tokenizer_kvs: list[tuple], llama_hf_to_gguf, write_gguf, publish) -> str:
    """The text model as convert_hf_to_gguf.py writes LLaVA's: a llama GGUF (F32), its
    vocabulary the SmolLM2 one plus <image> (a control token), LLaVA-1.5's chat template."""
    import gguf
    t = TEXT
    tensors = llama_hf_to_gguf(hf_weights(t, VOCAB), t, t['tied'])

    def tokenizer_value(key: str, value):
        if key == 'tokenizer.ggml.tokens':
            return list(value) + [IMAGE_TOKEN]
        if key == 'tokenizer.ggml.token_type':
            return list(value) + [gguf.TokenType.CONTROL]
        if key == 'tokenizer.ggml.scores':
            return list(value) + [0.0]
        return CHAT_TEMPLATE if key == 'tokenizer.chat_template' else value

    def fill(w) -> None:
        w.add_type('model')
        w.add_name(f'prism-fixture-{NAME}')
        w.add_vocab_size(VOCAB)
        w.add_context_length(8192)
        w.add_embedding_length(t['hidden'])
        w.add_block_count(t['layers'])
        w.add_feed_forward_length(t['inter'])
        w.add_head_count(t['heads'])
        w.add_head_count_kv(t['kv_heads'])
        w.add_rope_freq_base(100000.0)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_file_type(0)
        w.add_quantization_version(2)
        w.add_rope_dimension_count(t['head_dim'])
        keys = {k for k, _, _, _ in tokenizer_kvs}
        for key, value, vtype, sub in tokenizer_kvs:
            w.add_key_value(key, tokenizer_value(key, value), vtype, sub_type=sub)
        if 'tokenizer.chat_template' not in keys:
            w.add_string('tokenizer.chat_template', CHAT_TEMPLATE)
        for name, arr in tensors.items():
            w.add_tensor(name, arr.astype(np.float32), raw_dtype=gguf.GGMLQuantizationType.F32)

    if not any(k == 'tokenizer.ggml.tokens' and len(v) == 49152 for k, v, _, _ in tokenizer_kvs):
        raise SystemExit('make-fixtures: the default tokenizer GGUF does not hold 49152 tokens')
    return write_gguf(out, f'{NAME}-f32.gguf', 'llama', fill, publish)


def write_llava_fixtures(out: Path, log, tokenizer_gguf: Path, normal, hf_weights, publish, tokenizer_kvs: list[tuple],
                         llama_hf_to_gguf, write_gguf) -> list[dict]:
    """Writes the LLaVA fixtures; returns their manifest entries (vision_fixtures.py's shape)."""
    write_llava_tiny(out, tokenizer_gguf, normal, hf_weights, publish)
    log(f'{NAME}/')
    text = write_text_gguf(out, hf_weights, tokenizer_kvs, llama_hf_to_gguf, write_gguf, publish)
    log(text)
    mmproj = write_mmproj_gguf(out, normal, write_gguf, publish)
    log(mmproj)
    return [{'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'llava', 'weightType': 'F32',
             'tied': False, 'task': 'vision'},
            {'name': text[:-5], 'path': text, 'format': 'gguf', 'architecture': 'llama', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME},
            {'name': mmproj[:-5], 'path': mmproj, 'format': 'gguf', 'architecture': 'llava', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME}]
