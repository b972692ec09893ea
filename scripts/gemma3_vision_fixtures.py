"""The Gemma 3 vision fixtures, written by vision_fixtures.py's write_vision_fixtures into its OUT.

* gemma3-vision-tiny/: a random-weight Gemma3ForConditionalGeneration (SigLIP vision tower
  without its head, Gemma3MultiModalProjector: average pooling to mm_tokens_per_image rows,
  Gemma's RMSNorm mm_soft_emb_norm, mm_input_projection_weight; a gemma3_text model) saved by
  transformers (config.json, model.safetensors in float32), with its processor files:
  preprocessor_config.json as Gemma3ImageProcessor saves it (bilinear resize to image_size,
  rescale, mean / std 0.5, no pan-and-scan) and processor_config.json with Gemma3Processor's
  image_seq_length; a tokenizer: the default model's SmolLM2 tokenizer plus <start_of_image>
  49152, <end_of_image> 49153, <image_soft_token> 49154 (Gemma 3's boi, eoi and image tokens);
  a Gemma-style chat template writing <start_of_image> for an image part.

Shapes are small but nothing is degenerate: a 2-layer SigLIP of hidden 64 (4 heads of 16),
intermediate 128, on 112-pixel images of 14-pixel patches (8 x 8 patches, Gemma 3's patch
size) pooled 2 x 2 to 16 image tokens; the text model is make-fixtures.py's gemma3 shape (six
layers, five sliding with a 48-token window then a global one) with its own seed. The
projector's norm weight is drawn around 0 (Gemma's 1 + w), its rows come out at unit scale.

Beside the folder, llama.cpp's twin of the very same weights as convert_hf_to_gguf.py writes
Gemma3ForConditionalGeneration: gemma3-vision-tiny-f32.gguf (the text model, a gemma3 GGUF
with the norms' 1 + w baked in, the vocabulary with the three image tokens as control tokens)
and, with --mmproj, mmproj-gemma3-vision-tiny-f32.gguf: architecture clip, projector type
gemma3, the clip.vision.* shape, clip.vision.projector.scale_factor 2 (written as the
converter does when the pooling is not Gemma 3's 4), the v.* SigLIP tensors, mm.soft_emb_norm
(stored as 1 + w) and mm.input_projection (HF's [vision hidden, text hidden], in F16: the
converter forces it so).
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from vision_gguf import DEFAULT_VOCAB, write_gguf
from vision_hf import default_tokenizer, encoder_layer_weights, publish_folder, save_model

NAME = 'gemma3-vision-tiny'
VISION = dict(hidden=64, layers=2, heads=4, inter=128, patch=14, image=112, eps=1e-6, seed=61)
MM_TOKENS = 16
TEXT_SEED = 62
ADDED = ['<start_of_image>', '<end_of_image>', '<image_soft_token>']
BOI, EOI, IMAGE = DEFAULT_VOCAB, DEFAULT_VOCAB + 1, DEFAULT_VOCAB + 2
VOCAB = DEFAULT_VOCAB + len(ADDED)

# Gemma 3's chat template's shape (turns, <start_of_image> for an image part), in the default
# vocabulary's words.
CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}"
                 "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\n' }}"
                 "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
                 "{% for part in message['content'] %}{% if part['type'] == 'image' %}{{ '<start_of_image>' }}"
                 "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
                 "{{ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")


def patches_per_side() -> int:
    return VISION['image'] // VISION['patch']


def pooling() -> int:
    return patches_per_side() // int(round(MM_TOKENS ** 0.5))


def vision_weights(normal, text_hidden: int) -> dict[str, np.ndarray]:
    """The SigLIP tower and projector under transformers' module names."""
    s, d, inter, p = VISION['seed'], VISION['hidden'], VISION['inter'], VISION['patch']
    pre = 'model.vision_tower.'
    w = {pre + 'embeddings.patch_embedding.weight': normal(s, 'patch', (d, 3, p, p), 1 / np.sqrt(3 * p * p)),
         pre + 'embeddings.patch_embedding.bias': normal(s, 'patchb', (d,), 0.2),
         pre + 'embeddings.position_embedding.weight': normal(s, 'pos', (patches_per_side() ** 2, d), 0.5),
         pre + 'post_layernorm.weight': normal(s, 'post', (d,), 0.1, 1.0),
         pre + 'post_layernorm.bias': normal(s, 'postb', (d,), 0.1)}
    for i in range(VISION['layers']):
        w.update(encoder_layer_weights(normal, s, f'{pre}encoder.layers.{i}.', d, inter))
    mm = 'model.multi_modal_projector.'
    w[mm + 'mm_soft_emb_norm.weight'] = normal(s, 'softnorm', (d,), 0.2)  # Gemma's (1 + w): around 0
    w[mm + 'mm_input_projection_weight'] = normal(s, 'inproj', (d, text_hidden), 1 / np.sqrt(d))
    return w


def text_spec(arch_specs: dict) -> dict:
    return dict(arch_specs['gemma3'], seed=TEXT_SEED)


def config(text_config: dict) -> dict:
    v = VISION
    text = {k: val for k, val in text_config.items() if k not in ('architectures', 'torch_dtype')}
    return {
        'architectures': ['Gemma3ForConditionalGeneration'], 'model_type': 'gemma3',
        'mm_tokens_per_image': MM_TOKENS, 'boi_token_index': BOI, 'eoi_token_index': EOI,
        'image_token_index': IMAGE, 'initializer_range': 0.02,
        'vision_config': {'model_type': 'siglip_vision_model', 'hidden_size': v['hidden'],
                          'intermediate_size': v['inter'], 'num_hidden_layers': v['layers'],
                          'num_attention_heads': v['heads'], 'num_channels': 3, 'image_size': v['image'],
                          'patch_size': v['patch'], 'hidden_act': 'gelu_pytorch_tanh', 'layer_norm_eps': v['eps'],
                          'vision_use_head': False},
        'text_config': text,
    }


def write_tokenizer(dst: Path, tokenizer_gguf: Path) -> None:
    from tokenizers import AddedToken
    tok = default_tokenizer(tokenizer_gguf)
    tok.add_special_tokens({'additional_special_tokens': [AddedToken(t, normalized=False, special=True) for t in ADDED]})
    got = [tok.convert_tokens_to_ids(t) for t in ADDED]
    if got != [BOI, EOI, IMAGE]:
        raise SystemExit(f'make-fixtures: the Gemma 3 image tokens got ids {got}')
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(str(dst))


def write_gemma3_vision_tiny(out: Path, tokenizer_gguf: Path, normal, arch, publish) -> Path:
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessorPil
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    spec = text_spec(arch['specs'])
    text = arch['hf_weights'](spec, VOCAB)
    weights = {('model.language_model.' + k[len('model.'):]): v for k, v in text.items()}
    weights['lm_head.weight'] = text['model.embed_tokens.weight']  # tied, as Gemma 3's head is
    weights.update(vision_weights(normal, spec['hidden']))
    save_model(NAME, lambda: Gemma3ForConditionalGeneration(Gemma3Config(**config(arch['config'](spec, VOCAB)))),
               weights, tmp)
    write_tokenizer(tmp, tokenizer_gguf)
    edge = VISION['image']
    image_processor = Gemma3ImageProcessorPil(
        do_resize=True, size={'height': edge, 'width': edge}, resample=2, do_rescale=True, rescale_factor=1 / 255,
        do_normalize=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], do_convert_rgb=True,
        do_pan_and_scan=False)
    (tmp / 'processor_config.json').write_text(json.dumps(
        {'processor_class': 'Gemma3Processor', 'image_seq_length': MM_TOKENS}, indent=2) + '\n')
    return publish_folder(out, NAME, tmp, image_processor, publish)


def mmproj_name(hf: str) -> str:
    pre = 'model.vision_tower.'
    if hf.startswith(pre + 'encoder.layers.'):
        bid, rest = hf[len(pre + 'encoder.layers.'):].split('.', 1)
        part, kind = rest.rsplit('.', 1)
        names = {'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
                 'self_attn.out_proj': 'attn_out', 'layer_norm1': 'ln1', 'layer_norm2': 'ln2',
                 'mlp.fc1': 'ffn_up', 'mlp.fc2': 'ffn_down'}
        return f'v.blk.{bid}.{names[part]}.{kind}'
    return {pre + 'embeddings.patch_embedding.weight': 'v.patch_embd.weight',
            pre + 'embeddings.patch_embedding.bias': 'v.patch_embd.bias',
            pre + 'embeddings.position_embedding.weight': 'v.position_embd.weight',
            pre + 'post_layernorm.weight': 'v.post_ln.weight', pre + 'post_layernorm.bias': 'v.post_ln.bias',
            'model.multi_modal_projector.mm_soft_emb_norm.weight': 'mm.soft_emb_norm.weight',
            'model.multi_modal_projector.mm_input_projection_weight': 'mm.input_projection.weight'}[hf]


def write_mmproj_gguf(out: Path, normal, arch, publish) -> str:
    import gguf
    v = VISION
    text_hidden = text_spec(arch['specs'])['hidden']

    def fill(w) -> None:
        w.add_bool('clip.has_text_encoder', False)
        w.add_bool('clip.has_vision_encoder', True)
        w.add_file_type(0)
        w.add_name(f'prism-fixture-{NAME}')
        w.add_string('clip.projector_type', gguf.VISION_PROJECTOR_TYPE_NAMES[gguf.VISION_PROJECTOR_TYPE.GEMMA3])
        w.add_uint32('clip.vision.image_size', v['image'])
        w.add_uint32('clip.vision.patch_size', v['patch'])
        w.add_uint32('clip.vision.embedding_length', v['hidden'])
        w.add_uint32('clip.vision.feed_forward_length', v['inter'])
        w.add_uint32('clip.vision.projection_dim', text_hidden)
        w.add_uint32('clip.vision.attention.head_count', v['heads'])
        w.add_float32('clip.vision.attention.layer_norm_epsilon', v['eps'])
        w.add_uint32('clip.vision.block_count', v['layers'])
        w.add_array('clip.vision.image_mean', [0.5, 0.5, 0.5])
        w.add_array('clip.vision.image_std', [0.5, 0.5, 0.5])
        w.add_bool('clip.use_gelu', True)
        if pooling() != 4:  # the converter writes it only where it is not Gemma 3's 4
            w.add_uint32('clip.vision.projector.scale_factor', pooling())
        for hf, arr in vision_weights(normal, text_hidden).items():
            name = mmproj_name(hf)
            if name == 'mm.soft_emb_norm.weight':
                arr = arr + 1.0  # the converter bakes Gemma's (1 + w) into the file
            # The converter forces the input projection to F16 whatever the output type.
            f16 = name == 'mm.input_projection.weight'
            w.add_tensor(name, arr.astype(np.float16 if f16 else np.float32),
                         raw_dtype=gguf.GGMLQuantizationType.F16 if f16 else gguf.GGMLQuantizationType.F32)

    return write_gguf(out, f'mmproj-{NAME}-f32.gguf', 'clip', fill, publish)


def write_text_gguf(out: Path, arch, tokenizer_kvs: list[tuple]) -> str:
    """The text model as convert_hf_to_gguf.py writes Gemma 3's: a gemma3 GGUF (F32) whose
    vocabulary is the default one plus the image tokens (control tokens), the chat template."""
    import gguf
    spec = text_spec(arch['specs'])
    appended = {'tokenizer.ggml.tokens': ADDED, 'tokenizer.ggml.token_type': [gguf.TokenType.CONTROL] * len(ADDED),
                'tokenizer.ggml.scores': [0.0] * len(ADDED)}
    kvs = [(k, list(v) + appended[k] if k in appended else v, t, sub) for k, v, t, sub in tokenizer_kvs
           if k != 'tokenizer.chat_template']
    kvs.append(('tokenizer.chat_template', CHAT_TEMPLATE, gguf.GGUFValueType.STRING, None))
    tensors = arch['gguf_tensors'](spec, arch['hf_weights'](spec, VOCAB))
    return arch['write_gguf'](out, f'{NAME}-f32', spec, tensors, 'F32', kvs)


def write_gemma3_vision_fixtures(out: Path, log, tokenizer_gguf: Path, normal, publish, tokenizer_kvs: list[tuple],
                                 arch: dict) -> list[dict]:
    """Writes the Gemma 3 vision fixtures; returns their manifest entries. `arch`: make-fixtures.py's
    ARCH_SPECS ('specs') and its arch_hf_weights, arch_config, arch_gguf_tensors, write_arch_gguf."""
    write_gemma3_vision_tiny(out, tokenizer_gguf, normal, arch, publish)
    log(f'{NAME}/')
    text = write_text_gguf(out, arch, tokenizer_kvs)
    log(text)
    mmproj = write_mmproj_gguf(out, normal, arch, publish)
    log(mmproj)
    return [{'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'gemma3', 'weightType': 'F32',
             'tied': True, 'task': 'vision'},
            {'name': text[:-5], 'path': text, 'format': 'gguf', 'architecture': 'gemma3', 'weightType': 'F32',
             'tied': True, 'task': 'vision', 'reference': NAME},
            {'name': mmproj[:-5], 'path': mmproj, 'format': 'gguf', 'architecture': 'gemma3', 'weightType': 'F32',
             'tied': True, 'task': 'vision', 'reference': NAME}]
