"""The Hugging Face folder pieces shared by the vision-language fixtures
(scripts/vision_fixtures.py for smolvlm-tiny, scripts/llava_fixtures.py for llava-tiny): the
encoder layers' weights (CLIP's and SigLIP's layers have the same modules and names), the
default model's tokenizer both start from, and the saving of the model and processor files."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# Query / key gain of the vision encoders: attention far from uniform, so a wrong position
# table or patch order shows.
QK_GAIN = 2.0


def encoder_layer_weights(normal, seed: int, prefix: str, hidden: int, inter: int) -> dict[str, np.ndarray]:
    """One encoder layer's weights under transformers' names (`prefix`: '...encoder.layers.<i>.'),
    drawn with make-fixtures.py's `normal` under `seed`."""
    s, q, d = seed, prefix, hidden
    w = {}
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
    return w


def text_weights(hf_weights, spec: dict, vocab: int, prefix: str) -> dict[str, np.ndarray]:
    """make-fixtures.py's Llama weights with model.* renamed to `prefix`* (lm_head kept)."""
    w = hf_weights(spec, vocab)
    return {(prefix + k[len('model.'):]) if k.startswith('model.') else k: v for k, v in w.items()}


def default_tokenizer(tokenizer_gguf: Path):
    """The default model's SmolLM2 tokenizer, read from its GGUF by transformers."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(tokenizer_gguf.parent), gguf_file=tokenizer_gguf.name)
    if len(tok) != 49152:
        raise SystemExit(f'make-fixtures: the default tokenizer has {len(tok)} tokens, expected 49152')
    return tok


def save_model(name: str, build, weights: dict[str, np.ndarray], dst: Path) -> None:
    """The model `build()` makes (float32), its tensors replaced by `weights` (exactly its
    state dict's names, or make-fixtures stops naming the difference), saved to dst."""
    import torch
    torch.manual_seed(0)  # the module init is overwritten below; seeded so nothing is left to chance
    model = build().to(torch.float32)
    expected = set(model.state_dict())
    if expected != set(weights):
        raise SystemExit(f'make-fixtures: {name} tensors differ from transformers\' model: '
                         f'missing {sorted(expected - set(weights))}, extra {sorted(set(weights) - expected)}')
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    model.save_pretrained(str(dst))


def publish_folder(out: Path, name: str, tmp: Path, image_processor, publish) -> Path:
    """Finishes the folder in tmp (its model, tokenizer and processor saved) as the families'
    own folders are laid out, as older transformers save them: the image processor in
    preprocessor_config.json, processor_config.json holding only the processor's own keys.
    Then checks it is whole and publishes it as out/name."""
    image_processor.save_pretrained(str(tmp))
    processor_cfg = json.loads((tmp / 'processor_config.json').read_text())
    processor_cfg.pop('image_processor', None)
    (tmp / 'processor_config.json').write_text(json.dumps(processor_cfg, indent=2) + '\n')
    for f in ('preprocessor_config.json', 'processor_config.json', 'config.json', 'model.safetensors'):
        if not (tmp / f).exists():
            raise SystemExit(f'make-fixtures: {name}/{f} was not written')
    publish(tmp, out / name)
    return out / name
