"""Vision-language fixtures, written by make-fixtures.py into its OUT.

* llava-tiny/ and its GGUF pair: scripts/llava_fixtures.py.
* llava-next-tiny/ (LLaVA-1.6): scripts/llava_next_fixtures.py.
* smolvlm-tiny/: a random-weight Idefics3ForConditionalGeneration (SmolVLM's architecture:
  SigLIP vision encoder, pixel-shuffle connector, Llama text model) saved by transformers
  (config.json, model.safetensors in float32), with its processor files as Idefics3Processor
  saves them (preprocessor_config.json, processor_config.json, chat_template.jinja) and a
  tokenizer: the default model's SmolLM2 tokenizer (read from its GGUF by transformers) plus
  the 128 tokens SmolVLM-256M-Instruct's tokenizer adds, at the same ids (<global-img> 49152,
  <row_R_col_C> 49153..49188, <fake_token_around_image> 49189, <image> 49190, 88 reserved
  tokens, <end_of_utterance> 49279).

Shapes are small but nothing is degenerate: 64-pixel tiles of 8-pixel patches (64 patches),
scale factor 2 (16 image tokens per tile), images resized to a 256-pixel longest edge (up to
4 x 4 tiles plus the global image); a 2-layer GQA Llama of hidden 128.

Beside the folder, its llama.cpp twin of the very same weights, as convert_hf_to_gguf.py
writes SmolVLM (the text model; with --mmproj the image side): smolvlm-tiny-f32.gguf (a llama
GGUF, the tokenizer's 49,280 tokens with the added ones as control tokens, eos
<end_of_utterance>) and mmproj-smolvlm-tiny-f32.gguf (architecture clip, projector type
idefics3: v.* encoder tensors, mm.model.fc.weight, the image processor's mean / std and
longest edge) in F32 and, as --outtype f16 writes it, mmproj-smolvlm-tiny-f16.gguf.

Weights are drawn per tensor from numpy's PCG64 seeded by (fixture seed, tensor name), like
the other fixtures; the text model's with make-fixtures.py's own hf_weights. The vision
weights are scaled so that attention is far from uniform (a wrong position table or patch
order shows) and every layer moves the features.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from vision_gguf import write_gguf, write_text_gguf
from vision_hf import default_tokenizer, encoder_layer_weights, publish_folder, save_model, text_weights

NAME = 'smolvlm-tiny'
VISION = dict(hidden=64, layers=2, heads=4, inter=256, patch=8, tile=64, eps=1e-6, seed=41)
SCALE_FACTOR = 2
TILES_PER_EDGE = 4  # size.longest_edge = 4 tiles, as SmolVLM's 2048 = 4 x 512
TEXT = dict(arch='llama', hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, inter=256, tied=False, seed=42)

# SmolVLM-256M-Instruct's added tokens, in id order from 49152 (the SmolLM2 vocabulary's end).
SMOLVLM_ADDED = (['<global-img>'] + [f'<row_{r}_col_{c}>' for r in range(1, 7) for c in range(1, 7)]
                 + ['<fake_token_around_image>', '<image>']
                 + [f'<|reserved_special_token_{i}|>' for i in range(88)] + ['<end_of_utterance>'])
VOCAB = 49152 + len(SMOLVLM_ADDED)  # 49280, SmolVLM's vocab_size

# SmolVLM-256M-Instruct's chat template.
CHAT_TEMPLATE = ("<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
                 "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
                 "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
                 "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
                 "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")


def tokens_per_tile() -> int:
    return (VISION['tile'] // VISION['patch']) ** 2 // SCALE_FACTOR ** 2


def vision_weights(normal) -> dict[str, np.ndarray]:
    s, d, inter, p = VISION['seed'], VISION['hidden'], VISION['inter'], VISION['patch']
    n_pos = (VISION['tile'] // p) ** 2
    pre = 'model.vision_model.'
    w = {pre + 'embeddings.patch_embedding.weight': normal(s, 'patch', (d, 3, p, p), 1 / np.sqrt(3 * p * p)),
         pre + 'embeddings.patch_embedding.bias': normal(s, 'patchb', (d,), 0.2),
         pre + 'embeddings.position_embedding.weight': normal(s, 'pos', (n_pos, d), 0.5)}
    for i in range(VISION['layers']):
        w.update(encoder_layer_weights(normal, s, f'{pre}encoder.layers.{i}.', d, inter))
    w[pre + 'post_layernorm.weight'] = normal(s, 'post', (d,), 0.1, 1.0)
    w[pre + 'post_layernorm.bias'] = normal(s, 'postb', (d,), 0.1)
    # The connector's projection: unit-scale rows out, like the text model's token embeddings.
    fan_in = d * SCALE_FACTOR ** 2
    w['model.connector.modality_projection.proj.weight'] = normal(s, 'proj', (TEXT['hidden'], fan_in),
                                                                  1 / np.sqrt(fan_in))
    return w


def config() -> dict:
    v, t = VISION, TEXT
    return {
        'architectures': ['Idefics3ForConditionalGeneration'], 'model_type': 'idefics3',
        'image_token_id': 49190, 'scale_factor': SCALE_FACTOR, 'tie_word_embeddings': False,
        'vision_config': {'model_type': 'idefics3_vision', 'hidden_size': v['hidden'],
                          'intermediate_size': v['inter'], 'num_hidden_layers': v['layers'],
                          'num_attention_heads': v['heads'], 'num_channels': 3, 'image_size': v['tile'],
                          'patch_size': v['patch'], 'hidden_act': 'gelu_pytorch_tanh', 'layer_norm_eps': v['eps']},
        'text_config': {'model_type': 'llama', 'architectures': ['LlamaForCausalLM'], 'vocab_size': VOCAB,
                        'hidden_size': t['hidden'], 'intermediate_size': t['inter'],
                        'num_hidden_layers': t['layers'], 'num_attention_heads': t['heads'],
                        'num_key_value_heads': t['kv_heads'], 'head_dim': t['head_dim'], 'hidden_act': 'silu',
                        'max_position_embeddings': 8192, 'rms_norm_eps': 1e-5, 'rope_theta': 100000.0,
                        'tie_word_embeddings': False, 'bos_token_id': 1, 'eos_token_id': 2, 'pad_token_id': 2,
                        'attention_bias': False, 'mlp_bias': False},
    }


def write_tokenizer(dst: Path, tokenizer_gguf: Path) -> None:
    """The SmolLM2 tokenizer from the default model's GGUF, with SmolVLM's added tokens."""
    from tokenizers import AddedToken
    tok = default_tokenizer(tokenizer_gguf)
    tok.add_special_tokens({'additional_special_tokens': [AddedToken(t, normalized=False, special=True)
                                                          for t in SMOLVLM_ADDED]})
    for i, t in enumerate(SMOLVLM_ADDED):
        if tok.convert_tokens_to_ids(t) != 49152 + i:
            raise SystemExit(f'make-fixtures: {t} got id {tok.convert_tokens_to_ids(t)}, expected {49152 + i}')
    # SmolVLM's: generation stops at <end_of_utterance>.
    tok.eos_token = '<end_of_utterance>'
    tok.pad_token = '<|im_end|>'
    tok.save_pretrained(str(dst))


def write_smolvlm_tiny(out: Path, tokenizer_gguf: Path, normal, hf_weights, publish) -> Path:
    from transformers import (Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessorPil,
                              Idefics3Processor, PreTrainedTokenizerFast)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    # Idefics3's names for the text model: model.text_model.*, lm_head.
    weights = {**vision_weights(normal), **text_weights(hf_weights, TEXT, VOCAB, 'model.text_model.')}
    save_model(NAME, lambda: Idefics3ForConditionalGeneration(Idefics3Config(**config(), pad_token_id=2)),
               weights, tmp)
    write_tokenizer(tmp, tokenizer_gguf)
    tile = VISION['tile']
    image_processor = Idefics3ImageProcessorPil(
        do_resize=True, size={'longest_edge': TILES_PER_EDGE * tile}, resample=1, do_image_splitting=True,
        max_image_size={'longest_edge': tile}, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], do_pad=True, do_convert_rgb=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tmp))
    Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=tokens_per_tile(),
                      chat_template=CHAT_TEMPLATE).save_pretrained(str(tmp))
    return publish_folder(out, NAME, tmp, image_processor, publish)


# convert_hf_to_gguf.py --mmproj's names for SmolVLM's vision tensors (gguf-py's tensor map).
MMPROJ_LAYER_NAMES = {'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k', 'self_attn.v_proj': 'attn_v',
                      'self_attn.out_proj': 'attn_out', 'layer_norm1': 'ln1', 'layer_norm2': 'ln2',
                      'mlp.fc1': 'ffn_up', 'mlp.fc2': 'ffn_down'}


def mmproj_name(hf: str) -> str:
    pre = 'model.vision_model.'
    if hf.startswith(pre + 'encoder.layers.'):
        bid, rest = hf[len(pre + 'encoder.layers.'):].split('.', 1)
        part, kind = rest.rsplit('.', 1)
        return f'v.blk.{bid}.{MMPROJ_LAYER_NAMES[part]}.{kind}'
    return {pre + 'embeddings.patch_embedding.weight': 'v.patch_embd.weight',
            pre + 'embeddings.patch_embedding.bias': 'v.patch_embd.bias',
            pre + 'embeddings.position_embedding.weight': 'v.position_embd.weight',
            pre + 'post_layernorm.weight': 'v.post_ln.weight', pre + 'post_layernorm.bias': 'v.post_ln.bias',
            'model.connector.modality_projection.proj.weight': 'mm.model.fc.weight'}[hf]


def write_mmproj_gguf(out: Path, normal, publish, type_name: str) -> str:
    """The image side as convert_hf_to_gguf.py --mmproj writes SmolVLM, --outtype f32 or f16
    (F16: the matrices F16; vectors and, as its SmolVLM class forces, the embeddings F32)."""
    import gguf
    v = VISION
    f16 = type_name == 'F16'

    def fill(w) -> None:
        w.add_type('mmproj')
        w.add_name(f'prism-fixture-{NAME}')
        w.add_file_type(1 if f16 else 0)
        w.add_quantization_version(2)
        w.add_bool('clip.has_vision_encoder', True)
        w.add_uint32('clip.vision.projection_dim', TEXT['hidden'])
        w.add_uint32('clip.vision.image_size', v['tile'])
        w.add_uint32('clip.vision.patch_size', v['patch'])
        w.add_uint32('clip.vision.embedding_length', v['hidden'])
        w.add_uint32('clip.vision.feed_forward_length', v['inter'])
        w.add_uint32('clip.vision.block_count', v['layers'])
        w.add_uint32('clip.vision.attention.head_count', v['heads'])
        w.add_array('clip.vision.image_mean', [0.5, 0.5, 0.5])
        w.add_array('clip.vision.image_std', [0.5, 0.5, 0.5])
        w.add_string('clip.projector_type', 'idefics3')
        w.add_float32('clip.vision.attention.layer_norm_epsilon', v['eps'])
        w.add_uint32('clip.vision.projector.scale_factor', SCALE_FACTOR)
        w.add_bool('clip.use_gelu', True)
        w.add_uint32('clip.vision.preproc_image_size', TILES_PER_EDGE * v['tile'])
        for hf, arr in vision_weights(normal).items():
            if f16 and arr.ndim > 1 and '.embeddings.' not in hf:
                w.add_tensor(mmproj_name(hf), arr.astype(np.float16), raw_dtype=gguf.GGMLQuantizationType.F16)
            else:
                w.add_tensor(mmproj_name(hf), arr.astype(np.float32), raw_dtype=gguf.GGMLQuantizationType.F32)

    return write_gguf(out, f'mmproj-{NAME}-{type_name.lower()}.gguf', 'clip', fill, publish)


def write_smolvlm_text_gguf(out: Path, hf_weights, tokenizer_kvs: list[tuple], llama_hf_to_gguf, publish) -> str:
    """The text model as convert_hf_to_gguf.py writes SmolVLM's: a llama GGUF (F32), its
    vocabulary the SmolLM2 one plus SmolVLM's added tokens (control tokens), eos
    <end_of_utterance>, pad <|im_end|>, SmolVLM's chat template."""
    eos, pad = 49152 + SMOLVLM_ADDED.index('<end_of_utterance>'), 2
    return write_text_gguf(out, NAME, TEXT, llama_hf_to_gguf(hf_weights(TEXT, VOCAB), TEXT, TEXT['tied']),
                           tokenizer_kvs, SMOLVLM_ADDED,
                           {'tokenizer.ggml.eos_token_id': eos, 'tokenizer.ggml.padding_token_id': pad,
                            'tokenizer.chat_template': CHAT_TEMPLATE}, publish)


def write_vision_fixtures(out: Path, log, tokenizer_gguf: Path, normal, hf_weights, publish, tokenizer_kvs: list[tuple],
                          llama_hf_to_gguf) -> list[dict]:
    """Writes every vision fixture; returns their manifest entries (make-fixtures.py's shape,
    plus `task`: 'vision'). `normal`, `hf_weights`, `publish`, `tokenizer_kvs` (the default
    model's tokenizer.* metadata), `llama_hf_to_gguf`: make-fixtures.py's."""
    write_smolvlm_tiny(out, tokenizer_gguf, normal, hf_weights, publish)
    log(f'{NAME}/')
    text = write_smolvlm_text_gguf(out, hf_weights, tokenizer_kvs, llama_hf_to_gguf, publish)
    log(text)
    mmprojs = [write_mmproj_gguf(out, normal, publish, type_name) for type_name in ('F32', 'F16')]
    for mmproj in mmprojs:
        log(mmproj)
    import llava_fixtures
    llava = llava_fixtures.write_llava_fixtures(out, log, tokenizer_gguf, normal, hf_weights, publish, tokenizer_kvs,
                                                llama_hf_to_gguf)
    import llava_next_fixtures
    llava += llava_next_fixtures.write_llava_next_fixtures(out, log, tokenizer_gguf, normal, hf_weights, publish)
    # The GGUF pair's float reference is the folder of the same weights.
    return [*llava, {'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'idefics3', 'weightType': 'F32',
             'tied': False, 'task': 'vision'},
            {'name': text[:-5], 'path': text, 'format': 'gguf', 'architecture': 'llama', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME},
            *({'name': mmproj[:-5], 'path': mmproj, 'format': 'gguf', 'architecture': 'idefics3',
               'weightType': type_name, 'tied': False, 'task': 'vision', 'reference': NAME}
              for mmproj, type_name in zip(mmprojs, ('F32', 'F16')))]
