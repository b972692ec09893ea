"""GGUF writing shared by the vision-language fixtures (scripts/vision_fixtures.py for
smolvlm-tiny, scripts/llava_fixtures.py for llava-tiny): a GGUF written whole and then
published, and the text half of llama.cpp's pair of files, which convert_hf_to_gguf.py writes
alike for both families (a llama GGUF; the vocabulary the default model's SmolLM2 one plus
the family's added tokens)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

# The default model's (SmolLM2's) vocabulary: the added tokens take the ids from here on.
DEFAULT_VOCAB = 49152


def write_gguf(out: Path, name: str, arch: str, fill, publish) -> str:
    """A GGUF written by `fill(writer)` to a temporary file, then published as out/name."""
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


def write_text_gguf(out: Path, model: str, spec: dict, tensors: dict[str, np.ndarray], tokenizer_kvs: list[tuple],
                    added_tokens: list[str], overrides: dict, publish) -> str:
    """The text model as convert_hf_to_gguf.py writes a vision-language model's: a llama GGUF
    (F32) of `tensors` (llama.cpp's names) for `spec` (make-fixtures.py's shape keys; both
    families' text_config: rope_theta 100000, 8192 positions, rms_norm_eps 1e-5), published as
    out/<model>-f32.gguf; returns that name. Its tokenizer.* metadata is the default model's
    (`tokenizer_kvs`) with `added_tokens` appended as control tokens and the values in
    `overrides` (key: value) in place of the default model's; an overriding
    tokenizer.chat_template the default model has none of is added after them."""
    import gguf
    if not any(k == 'tokenizer.ggml.tokens' and len(v) == DEFAULT_VOCAB for k, v, _, _ in tokenizer_kvs):
        raise SystemExit(f'make-fixtures: the default tokenizer GGUF does not hold {DEFAULT_VOCAB} tokens')
    appended = {'tokenizer.ggml.tokens': list(added_tokens),
                'tokenizer.ggml.token_type': [gguf.TokenType.CONTROL] * len(added_tokens),
                'tokenizer.ggml.scores': [0.0] * len(added_tokens)}

    def tokenizer_value(key: str, value):
        return list(value) + appended[key] if key in appended else overrides.get(key, value)

    def fill(w) -> None:
        w.add_type('model')
        w.add_name(f'prism-fixture-{model}')
        w.add_vocab_size(DEFAULT_VOCAB + len(added_tokens))
        w.add_context_length(8192)
        w.add_embedding_length(spec['hidden'])
        w.add_block_count(spec['layers'])
        w.add_feed_forward_length(spec['inter'])
        w.add_head_count(spec['heads'])
        w.add_head_count_kv(spec['kv_heads'])
        w.add_rope_freq_base(100000.0)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_file_type(0)
        w.add_quantization_version(2)
        w.add_rope_dimension_count(spec['head_dim'])
        for key, value, vtype, sub in tokenizer_kvs:
            w.add_key_value(key, tokenizer_value(key, value), vtype, sub_type=sub)
        if 'tokenizer.chat_template' in overrides and not any(k == 'tokenizer.chat_template'
                                                             for k, _, _, _ in tokenizer_kvs):
            w.add_string('tokenizer.chat_template', overrides['tokenizer.chat_template'])
        for tensor, arr in tensors.items():
            w.add_tensor(tensor, arr.astype(np.float32), raw_dtype=gguf.GGMLQuantizationType.F32)

    return write_gguf(out, f'{model}-f32.gguf', 'llama', fill, publish)
