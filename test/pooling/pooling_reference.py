#!/usr/bin/env python3
"""Float32 references of pooling models for test/pooling/reference.ts.

Usage: pooling_reference.py --jobs JOBS.json, a list of jobs, each writing `out` (JSON):

* kind 'embed': sentence-transformers' SentenceTransformer on the folder (its modules.json:
  Transformer, Pooling, Normalize). Inputs: `texts` (tokenized by the model's own tokenizer,
  truncated to its max_seq_length, as encode() does) or `ids` (token ids, special tokens
  included). Writes the ids and token types it ran and the sentence embeddings.
* kind 'score': sentence-transformers' CrossEncoder on (query, document) `pairs`. Writes the
  ids and token types, the raw logits and predict()'s scores (its default activation:
  sigmoid for one label).
* kind 'yesno': a causal LM (transformers) on `ids` (one prompt each): the last position's
  logits of `tokens` ([no, yes] for Qwen3-Reranker) and P(yes) = softmax over the two.
* kind 'nomic': NomicBERT, which transformers does not ship (nomic-ai's modeling code lives on
  the model hub), written out below in torch from nomic-ai's NomicBertModel: post-norm
  layers, rotary (rotate_half) attention, SwiGLU (fc11 * silu(fc12)), then sentence-transformers'
  mean pooling and Normalize. Inputs: `ids`.
"""
from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_VERBOSITY', 'error')

import torch  # noqa: E402

REFERENCE_VERSION = 1
torch.set_num_threads(2)


def rows(t: torch.Tensor) -> list[list[float]]:
    return t.to(torch.float32).tolist()


def unpadded(features: dict, key: str) -> list[list[int]]:
    mask = features['attention_mask']
    return [features[key][i][mask[i].bool()].tolist() for i in range(mask.shape[0])]


def padded(ids: list[list[int]], pad: int) -> dict:
    n = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), n), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), n), dtype=torch.long)
    for i, x in enumerate(ids):
        input_ids[i, :len(x)] = torch.tensor(x)
        mask[i, :len(x)] = 1
    return {'input_ids': input_ids, 'attention_mask': mask}


def embed(job: dict) -> dict:
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(job['model'], device='cpu')
    model.eval()
    out = {'ids': [], 'typeIds': [], 'embeddings': []}
    inputs = job.get('texts') or job['ids']
    for start in range(0, len(inputs), 16):
        chunk = inputs[start:start + 16]
        if 'texts' in job:
            features = model.tokenize(chunk)
        else:
            pad = model.tokenizer.pad_token_id or 0
            features = padded(chunk, pad)
            if model.tokenizer.padding_side == 'left':
                raise SystemExit('pooling_reference: token-id inputs need a right-padding tokenizer')
        with torch.no_grad():
            result = model(dict(features))
        out['ids'] += unpadded(features, 'input_ids')
        out['typeIds'] += unpadded(features, 'token_type_ids') if 'token_type_ids' in features else [
            [0] * len(x) for x in unpadded(features, 'input_ids')]
        out['embeddings'] += rows(result['sentence_embedding'])
    return out


def score(job: dict) -> dict:
    from sentence_transformers import CrossEncoder
    model = CrossEncoder(job['model'], device='cpu')
    pairs = [tuple(p) for p in job['pairs']]
    features = model.tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=True, truncation=True,
                               return_tensors='pt')
    with torch.no_grad():
        logits = model.model(**features).logits
    scores = model.predict(pairs, convert_to_tensor=True)
    types = unpadded(features, 'token_type_ids') if 'token_type_ids' in features else [
        [0] * len(x) for x in unpadded(features, 'input_ids')]
    return {'ids': unpadded(features, 'input_ids'), 'typeIds': types, 'logits': rows(logits),
            'scores': scores.reshape(len(pairs), -1).tolist()}


def nomic(job: dict) -> dict:
    from safetensors.torch import load_file
    cfg = json.load(open(os.path.join(job['model'], 'config.json')))
    w = load_file(os.path.join(job['model'], 'model.safetensors'))
    d, heads, eps = cfg['n_embd'], cfg['n_head'], cfg['layer_norm_epsilon']
    hd = d // heads
    ln = torch.nn.functional.layer_norm
    inv = 1.0 / (cfg['rotary_emb_base'] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))

    def rotate(x: torch.Tensor, n: int) -> torch.Tensor:  # x: [n, heads, hd], rotate_half pairs
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1).float()[:, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1).float()[:, None, :]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    out = {'ids': job['ids'], 'typeIds': [[0] * len(x) for x in job['ids']], 'embeddings': []}
    for ids in job['ids']:
        n = len(ids)
        x = w['embeddings.word_embeddings.weight'][torch.tensor(ids)] + w['embeddings.token_type_embeddings.weight'][0]
        x = ln(x, (d,), w['emb_ln.weight'], w['emb_ln.bias'], eps)
        for i in range(cfg['n_layer']):
            p = f'encoder.layers.{i}.'
            q, k, v = (x @ w[p + 'attn.Wqkv.weight'].T).view(n, 3, heads, hd).unbind(1)
            q, k = rotate(q, n), rotate(k, n)
            att = torch.softmax(torch.einsum('qhd,khd->hqk', q, k) / hd ** 0.5, -1)
            a = torch.einsum('hqk,khd->qhd', att, v).reshape(n, d) @ w[p + 'attn.out_proj.weight'].T
            x = ln(x + a, (d,), w[p + 'norm1.weight'], w[p + 'norm1.bias'], eps)
            up = x @ w[p + 'mlp.fc11.weight'].T
            gate = torch.nn.functional.silu(x @ w[p + 'mlp.fc12.weight'].T)
            x = ln(x + (up * gate) @ w[p + 'mlp.fc2.weight'].T, (d,), w[p + 'norm2.weight'], w[p + 'norm2.bias'], eps)
        out['embeddings'].append(torch.nn.functional.normalize(x.mean(0), dim=0).tolist())
    return out


def yesno(job: dict) -> dict:
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(job['model'], torch_dtype=torch.float32).eval()
    no, yes = job['tokens']
    logits, scores = [], []
    for ids in job['ids']:
        with torch.no_grad():
            last = model(torch.tensor([ids])).logits[0, -1]
        pair = torch.stack([last[no], last[yes]])
        logits.append(pair.tolist())
        scores.append([torch.softmax(pair, 0)[1].item()])
    return {'ids': job['ids'], 'typeIds': [[0] * len(x) for x in job['ids']], 'logits': logits, 'scores': scores}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--jobs', required=True)
    args = ap.parse_args()
    for job in json.load(open(args.jobs)):
        with torch.no_grad():
            result = {'embed': embed, 'score': score, 'nomic': nomic, 'yesno': yesno}[job['kind']](job)
        tmp = job['out'] + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(result, f)
        os.replace(tmp, job['out'])


if __name__ == '__main__':
    main()
