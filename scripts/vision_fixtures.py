"""Vision-language fixtures, written by make-fixtures.py into its OUT.

* llava-tiny/ and its GGUF pair: scripts/llava_fixtures.py.
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

import json
import tempfile
from pathlib import Path

import numpy as np

NAME = 'smolvlm-tiny'
VISION = dict(hidden=64, layers=2, heads=4, inter=256, patch=8, tile=64, eps=1e-6, seed=41)
SCALE_FACTOR = 2
TILES_PER_EDGE = 4  # size.longest_edge = 4 tiles, as SmolVLM's 2048 = 4 x 512
TEXT = dict(arch='llama', hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, inter=256, tied=False, seed=42)
QK_GAIN = 2.0

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
    w[pre + 'post_layernorm.weight'] = normal(s, 'post', (d,), 0.1, 1.0)
    w[pre + 'post_layernorm.bias'] = normal(s, 'postb', (d,), 0.1)
    # The connector's projection: unit-scale rows out, like the text model's token embeddings.
    fan_in = d * SCALE_FACTOR ** 2
    w['model.connector.modality_projection.proj.weight'] = normal(s, 'proj', (TEXT['hidden'], fan_in),
                                                                  1 / np.sqrt(fan_in))
    return w


def text_weights(hf_weights) -> dict[str, np.ndarray]:
    """make-fixtures.py's Llama weights under Idefics3's names (model.text_model.*, lm_head)."""
    w = hf_weights(TEXT, VOCAB)
    return {('model.text_model.' + k[len('model.'):]) if k.startswith('model.') else k: v for k, v in w.items()}


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
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(tokenizer_gguf.parent), gguf_file=tokenizer_gguf.name)
    if len(tok) != 49152:
        raise SystemExit(f'make-fixtures: the default tokenizer has {len(tok)} tokens, expected 49152')
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
    import torch
    from transformers import (Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessorPil,
                              Idefics3Processor, PreTrainedTokenizerFast)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{NAME}-', dir=out))
    weights = {**vision_weights(normal), **text_weights(hf_weights)}
    torch.manual_seed(0)  # the module init is overwritten below; seeded so nothing is left to chance
    model = Idefics3ForConditionalGeneration(Idefics3Config(**config(), pad_token_id=2)).to(torch.float32)
    expected = set(model.state_dict())
    if expected != set(weights):
        raise SystemExit(f'make-fixtures: {NAME} tensors differ from transformers\' model: '
                         f'missing {sorted(expected - set(weights))}, extra {sorted(set(weights) - expected)}')
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    model.save_pretrained(str(tmp))
    write_tokenizer(tmp, tokenizer_gguf)
    tile = VISION['tile']
    image_processor = Idefics3ImageProcessorPil(
        do_resize=True, size={'longest_edge': TILES_PER_EDGE * tile}, resample=1, do_image_splitting=True,
        max_image_size={'longest_edge': tile}, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], do_pad=True, do_convert_rgb=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tmp))
    Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=tokens_per_tile(),
                      chat_template=CHAT_TEMPLATE).save_pretrained(str(tmp))
    # Laid out as SmolVLM's own folders are (and older transformers save): the image processor
    # in preprocessor_config.json, processor_config.json holding only the processor's own keys.
    image_processor.save_pretrained(str(tmp))
    processor_cfg = json.loads((tmp / 'processor_config.json').read_text())
    processor_cfg.pop('image_processor', None)
    (tmp / 'processor_config.json').write_text(json.dumps(processor_cfg, indent=2) + '\n')
    for f in ('preprocessor_config.json', 'processor_config.json', 'config.json', 'model.safetensors'):
        if not (tmp / f).exists():
            raise SystemExit(f'make-fixtures: {NAME}/{f} was not written')
    publish(tmp, out / NAME)
    return out / NAME


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


def write_gguf(out: Path, name: str, arch: str, fill, publish) -> str:
    """A GGUF written by `fill(writer)` to a temporary file, then published as out/name."""
    import os
    import gguf
    fd, tmp = tempfile.mkstemp(prefix=f'.{name}-', dir=out)
    os.close(fd)
    w = gguf.GGUFWriter(tmp, arch)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    publish(Path(tmp), out / name)
    return name


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


def write_text_gguf(out: Path, hf_weights, tokenizer_kvs: list[tuple], llama_hf_to_gguf, publish) -> str:
    """The text model as convert_hf_to_gguf.py writes SmolVLM's: a llama GGUF (F32), its
    vocabulary the SmolLM2 one plus SmolVLM's added tokens (control tokens), eos
    <end_of_utterance>, pad <|im_end|>, SmolVLM's chat template."""
    import gguf
    t = TEXT
    tensors = llama_hf_to_gguf(hf_weights(t, VOCAB), t, t['tied'])
    eos, pad = 49152 + SMOLVLM_ADDED.index('<end_of_utterance>'), 2

    def tokenizer_value(key: str, value):
        if key == 'tokenizer.ggml.tokens':
            return list(value) + SMOLVLM_ADDED
        if key == 'tokenizer.ggml.token_type':
            return list(value) + [gguf.TokenType.CONTROL] * len(SMOLVLM_ADDED)
        if key == 'tokenizer.ggml.scores':
            return list(value) + [0.0] * len(SMOLVLM_ADDED)
        return {'tokenizer.ggml.eos_token_id': eos, 'tokenizer.ggml.padding_token_id': pad,
                'tokenizer.chat_template': CHAT_TEMPLATE}.get(key, value)

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
        for key, value, vtype, sub in tokenizer_kvs:
            w.add_key_value(key, tokenizer_value(key, value), vtype, sub_type=sub)
        for name, arr in tensors.items():
            w.add_tensor(name, arr.astype(np.float32), raw_dtype=gguf.GGMLQuantizationType.F32)

    if not any(k == 'tokenizer.ggml.tokens' and len(v) == 49152 for k, v, _, _ in tokenizer_kvs):
        raise SystemExit('make-fixtures: the default tokenizer GGUF does not hold 49152 tokens')
    return write_gguf(out, f'{NAME}-f32.gguf', 'llama', fill, publish)


def write_vision_fixtures(out: Path, log, tokenizer_gguf: Path, normal, hf_weights, publish, tokenizer_kvs: list[tuple],
                          llama_hf_to_gguf) -> list[dict]:
    """Writes every vision fixture; returns their manifest entries (make-fixtures.py's shape,
    plus `task`: 'vision'). `normal`, `hf_weights`, `publish`, `tokenizer_kvs` (the default
    model's tokenizer.* metadata), `llama_hf_to_gguf`: make-fixtures.py's."""
    write_smolvlm_tiny(out, tokenizer_gguf, normal, hf_weights, publish)
    log(f'{NAME}/')
    text = write_text_gguf(out, hf_weights, tokenizer_kvs, llama_hf_to_gguf, publish)
    log(text)
    mmprojs = [write_mmproj_gguf(out, normal, publish, type_name) for type_name in ('F32', 'F16')]
    for mmproj in mmprojs:
        log(mmproj)
    import llava_fixtures
    llava = llava_fixtures.write_llava_fixtures(out, log, tokenizer_gguf, normal, hf_weights, publish, tokenizer_kvs,
                                                llama_hf_to_gguf, write_gguf)
    # The GGUF pair's float reference is the folder of the same weights.
    return [*llava, {'name': NAME, 'path': NAME, 'format': 'safetensors', 'architecture': 'idefics3', 'weightType': 'F32',
             'tied': False, 'task': 'vision'},
            {'name': text[:-5], 'path': text, 'format': 'gguf', 'architecture': 'llama', 'weightType': 'F32',
             'tied': False, 'task': 'vision', 'reference': NAME},
            *({'name': mmproj[:-5], 'path': mmproj, 'format': 'gguf', 'architecture': 'idefics3',
               'weightType': type_name, 'tied': False, 'task': 'vision', 'reference': NAME}
              for mmproj, type_name in zip(mmprojs, ('F32', 'F16')))]
