#!/usr/bin/env python3
"""Trains two small PEFT LoRA adapters on the default model, to show adapters end to end.

  fr:   answers "What is the capital of X?" in French ("La capitale de l'Espagne est Madrid.")
  caps: answers the same questions in capital letters ("THE CAPITAL OF SPAIN IS MADRID.")

The base weights are the default GGUF model's, dequantized to float32 by transformers'
GGUF loader (as test/reference/logits.py does), so the adapters fit exactly what Prism
serves. The data is generated from a table of countries; three countries are held out
(the test asks about them, so it sees the learned style, not memorised answers). Only the
answer tokens carry loss. To stay within a minute or two on 2 CPU cores, LoRA adapts q/k/v/o
of the last 6 layers only (backward stops there), rank 8, a short AdamW run at a high
learning rate; seeded, so a rerun gives the same adapters.

Writes OUT/fr/ and OUT/caps/ (adapter_config.json + adapter_model.safetensors, made by
`save_pretrained`) and OUT/manifest.json last, with this script's hash and the held-out
prompts. Usage: python3 scripts/train-adapters.py [--model PATH] [--out DIR] [--steps N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# English name, French "de ..." form, capital (English), capital (French).
COUNTRIES = [
    ('France', 'de la France', 'Paris', 'Paris'),
    ('Germany', "de l'Allemagne", 'Berlin', 'Berlin'),
    ('Italy', "de l'Italie", 'Rome', 'Rome'),
    ('Japan', 'du Japon', 'Tokyo', 'Tokyo'),
    ('China', 'de la Chine', 'Beijing', 'Pékin'),
    ('Russia', 'de la Russie', 'Moscow', 'Moscou'),
    ('England', "de l'Angleterre", 'London', 'Londres'),
    ('Egypt', "de l'Égypte", 'Cairo', 'Le Caire'),
    ('Greece', 'de la Grèce', 'Athens', 'Athènes'),
    ('Portugal', 'du Portugal', 'Lisbon', 'Lisbonne'),
    ('Austria', "de l'Autriche", 'Vienna', 'Vienne'),
    ('Poland', 'de la Pologne', 'Warsaw', 'Varsovie'),
    ('Sweden', 'de la Suède', 'Stockholm', 'Stockholm'),
    ('Norway', 'de la Norvège', 'Oslo', 'Oslo'),
    ('Belgium', 'de la Belgique', 'Brussels', 'Bruxelles'),
    ('Mexico', 'du Mexique', 'Mexico City', 'Mexico'),
    ('Canada', 'du Canada', 'Ottawa', 'Ottawa'),
    ('Brazil', 'du Brésil', 'Brasília', 'Brasilia'),
    ('Argentina', "de l'Argentine", 'Buenos Aires', 'Buenos Aires'),
    ('India', "de l'Inde", 'New Delhi', 'New Delhi'),
    ('Kenya', 'du Kenya', 'Nairobi', 'Nairobi'),
    ('Peru', 'du Pérou', 'Lima', 'Lima'),
    ('Ireland', "de l'Irlande", 'Dublin', 'Dublin'),
    ('Denmark', 'du Danemark', 'Copenhagen', 'Copenhague'),
    ('Hungary', 'de la Hongrie', 'Budapest', 'Budapest'),
    ('Turkey', 'de la Turquie', 'Ankara', 'Ankara'),
    ('Morocco', 'du Maroc', 'Rabat', 'Rabat'),
    # Held out: the test asks about these.
    ('Spain', "de l'Espagne", 'Madrid', 'Madrid'),
    ('Finland', 'de la Finlande', 'Helsinki', 'Helsinki'),
    ('Chile', 'du Chili', 'Santiago', 'Santiago'),
]
HELD_OUT = 3
QUESTIONS = [
    'What is the capital of {c}?',
    'Which city is the capital of {c}?',
    'Tell me the capital of {c}.',
]
PROMPT = 'Question: {q}\nAnswer:'


def answer(kind: str, c: tuple[str, str, str, str]) -> str:
    en, fr_de, cap, cap_fr = c
    if kind == 'fr':
        return f' La capitale {fr_de} est {cap_fr}.'
    return f' The capital of {en} is {cap}.'.upper()


def examples(kind: str) -> list[tuple[str, str]]:
    return [(PROMPT.format(q=q.format(c=c[0])), answer(kind, c)) for c in COUNTRIES[:-HELD_OUT] for q in QUESTIONS]


def train(kind: str, model_path: Path, out: Path, steps: int) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    random.seed(0)
    tok = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    base = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                dtype=torch.float32)
    n_layers = base.config.num_hidden_layers
    cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, bias='none', task_type='CAUSAL_LM',
                     target_modules=['q_proj', 'k_proj', 'v_proj', 'o_proj'],
                     layers_to_transform=list(range(n_layers - 6, n_layers)))
    model = get_peft_model(base, cfg)
    data = examples(kind)
    eos = tok.eos_token_id
    rows = []
    for prompt, ans in data:
        p = tok(prompt, add_special_tokens=False)['input_ids']
        a = tok(ans, add_special_tokens=False)['input_ids'] + [eos]
        rows.append((p + a, [-100] * len(p) + a))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    model.train()
    batch = 4
    started = time.time()
    for step in range(steps):
        picked = random.sample(rows, batch)
        width = max(len(ids) for ids, _ in picked)
        ids = torch.tensor([r[0] + [eos] * (width - len(r[0])) for r in picked])
        labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in picked])
        mask = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in picked])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 5 == 0 or step == steps - 1:
            print(f'train-adapters: {kind} step {step} loss {loss.item():.3f} ({time.time() - started:.0f} s)',
                  flush=True)
    target = out / kind
    if target.exists():
        shutil.rmtree(target)
    model.save_pretrained(str(target))
    readme = target / 'README.md'
    if readme.exists():
        readme.unlink()
    for f in target.iterdir():
        f.chmod(0o644)
    target.chmod(0o755)
    return {'name': kind, 'path': kind, 'steps': steps, 'final_loss': round(float(loss.item()), 4),
            'seconds': round(time.time() - started, 1)}


def generator_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', type=Path, default=ROOT / 'models' / 'SmolLM2-135M-Instruct.Q4_1.gguf')
    ap.add_argument('--out', type=Path, default=ROOT / 'test' / 'fixtures' / 'generated' / 'trained-adapters')
    ap.add_argument('--steps', type=int, default=24)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / 'manifest.json'
    if manifest.exists():
        manifest.unlink()
    entries = [train(kind, args.model, args.out, args.steps) for kind in ('fr', 'caps')]
    held = [PROMPT.format(q=QUESTIONS[0].format(c=c[0])) for c in COUNTRIES[-HELD_OUT:]]
    tmp = manifest.with_suffix('.json.tmp')
    tmp.write_text(json.dumps({'generator': generator_hash(), 'adapters': entries, 'heldOut': held}, indent=2) + '\n')
    os.replace(tmp, manifest)


if __name__ == '__main__':
    main()
