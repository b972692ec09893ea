#!/usr/bin/env python3
"""The PyTorch + transformers peer of the GPU benchmark (bench/gpu/run.ts): the same Hugging
Face folder (BF16) on the same GPU, measured the way a user of that stack would run it.

  decode1     batch-1 greedy decode with `generate` and the static cache (which compiles the
              forward): tokens of the timed run minus a run of one new token, over the time
              difference, so prefill and start-up are not counted
  prefill     one forward of a --prefill-tokens prompt (logits of the last position only),
              tok/s and TFLOP/s (2 × Linear weights per token; attention not counted)
  aggregate   --sequences sequences decoded together, eager `generate` (dynamic cache),
              counted as for decode1

Prints one JSON object per measure on stdout. Needs torch with CUDA and transformers; the
inputs are token ids (no tokenizer). Usage:
  python3 bench/gpu/torch_peer.py --model DIR [--measures decode1,prefill,aggregate] [--new-tokens N]
                                  [--prompt-tokens N] [--prefill-tokens N] [--sequences N] [--runs N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', required=True)
    ap.add_argument('--measures', default='decode1,prefill,aggregate')
    ap.add_argument('--new-tokens', type=int, default=128)
    ap.add_argument('--prompt-tokens', type=int, default=32)
    ap.add_argument('--prefill-tokens', type=int, default=2048)
    ap.add_argument('--sequences', type=int, default=64)
    ap.add_argument('--aggregate-new-tokens', type=int, default=32)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--device', default='cuda')
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    dev = torch.device(args.device)
    t0 = time.monotonic()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16).to(dev).eval()
    load_s = time.monotonic() - t0
    # Multiply-add weights: every Linear (the output head included, tied or not), not the
    # embedding lookup.
    params = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    vocab = model.config.vocab_size
    g = torch.Generator(device='cpu').manual_seed(0)

    def ids(batch: int, n: int) -> torch.Tensor:
        return torch.randint(1000, vocab - 1000, (batch, n), generator=g).to(dev)

    def sync() -> None:
        if dev.type == 'cuda':
            torch.cuda.synchronize()

    def emit(**row) -> None:
        row.update(model=args.model, params=params, device=torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu',
                   torch=torch.__version__, load_s=round(load_s, 2))
        print(json.dumps(row), flush=True)

    def generate_s(inp: torch.Tensor, new: int, **kw) -> float:
        cfg = GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0, **kw)
        sync()
        start = time.perf_counter()
        with torch.inference_mode():
            model.generate(inp, attention_mask=torch.ones_like(inp), generation_config=cfg)
        sync()
        return time.perf_counter() - start

    def decode_rate(batch: int, new: int, **kw) -> tuple[float, float]:
        """(tok/s of the decode steps alone, seconds of the first compile/warm-up run)"""
        inp = ids(batch, args.prompt_tokens)
        warm = generate_s(inp, new, **kw)
        generate_s(inp, 1, **kw)
        rates = []
        for _ in range(args.runs):
            full = generate_s(inp, new, **kw)
            one = generate_s(inp, 1, **kw)
            rates.append(batch * (new - 1) / max(full - one, 1e-9))
        return statistics.median(rates), warm

    for measure in args.measures.split(','):
        if measure == 'decode1':
            rate, warm = decode_rate(1, args.new_tokens, cache_implementation='static')
            emit(measure='decode1', tok_s=rate, warmup_s=round(warm, 1), cache='static (compiled forward)')
        elif measure == 'aggregate':
            rate, warm = decode_rate(args.sequences, args.aggregate_new_tokens)
            emit(measure='aggregate', sequences=args.sequences, tok_s=rate, warmup_s=round(warm, 1), cache='dynamic (eager)')
        elif measure == 'prefill':
            inp = ids(1, args.prefill_tokens)
            with torch.inference_mode():
                model(inp, logits_to_keep=1)
                times = []
                for _ in range(args.runs):
                    sync()
                    start = time.perf_counter()
                    model(inp, logits_to_keep=1)
                    sync()
                    times.append(time.perf_counter() - start)
            s = statistics.median(times)
            emit(measure='prefill', tokens=args.prefill_tokens, tok_s=args.prefill_tokens / s,
                 tflops=2 * params * args.prefill_tokens / s / 1e12)
        else:
            sys.exit(f'torch_peer: unknown measure {measure!r}')


if __name__ == '__main__':
    main()
