/**
 * llama.cpp as bench:lora's peer: the same base GGUF and the same PEFT adapter, converted to a
 * GGUF LoRA by scripts/peft-to-gguf-lora.py and run through node-llama-cpp's prebuilt CPU
 * binary (nothing built or downloaded at run time).
 *
 * llama.cpp applies an adapter to a whole context (every sequence in it), so the scenario both
 * engines can run is "one adapter for every request": output tok/s at the same concurrency,
 * prompts and token counts as Prism's scenarios, measured the same way (first request sent →
 * last token, prefill included). Before any timing the conversion is checked: with the trained
 * French adapter, llama.cpp's greedy continuation of each held-out prompt must equal Prism's.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import { projectRoot } from '../engine/default-model.js';
import { GREEDY, loadPrebuiltLlamaModel } from './engine/llamacpp.js';

/**
 * Points $PYTHON at the project's Python (.venv from requirements-dev.txt, made if missing,
 * as `npm test` does) unless it is set: the converter and the adapter trainer need gguf,
 * safetensors, torch and peft, which the machine's own python3 may lack.
 */
export async function useProjectPython(): Promise<void> {
  if (process.env.PYTHON) return;
  const { ensurePythonEnv } = await import('../scripts/python-env.mjs');
  const bin = ensurePythonEnv(projectRoot());
  if (bin) process.env.PYTHON = join(bin, 'python');
}

const python = (): string => process.env.PYTHON ?? 'python3';

/** Writes `out` (a GGUF LoRA) from the PEFT directory `adapterDir` of a llama base with these heads. */
export async function convertToGgufLora(
  adapterDir: string,
  out: string,
  heads: { numHeads: number; numKvHeads: number },
): Promise<void> {
  execFileSync(
    python(),
    [
      join(projectRoot(), 'scripts', 'peft-to-gguf-lora.py'),
      adapterDir,
      out,
      '--heads',
      String(heads.numHeads),
      '--kv-heads',
      String(heads.numKvHeads),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

export interface PeerOptions {
  readonly modelPath: string;
  readonly threads: number;
  readonly concurrency: number;
  /** Prompt + new tokens of one sequence. */
  readonly tokensPerSequence: number;
}

/** One llama.cpp context with `concurrency` sequences, with no adapter or one GGUF LoRA. */
export class LlamaLoraPeer {
  private constructor(
    private readonly dispose_: () => Promise<void>,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
  ) {}

  static async load(o: PeerOptions, loraFile?: string): Promise<LlamaLoraPeer> {
    const { llama, model } = await loadPrebuiltLlamaModel(o.modelPath, o.threads);
    const context = await model.createContext({
      contextSize: o.concurrency * o.tokensPerSequence,
      sequences: o.concurrency,
      // Room for every prompt in one llama_decode call, like Prism's batched prefill.
      batchSize: o.concurrency * o.tokensPerSequence,
      threads: { ideal: o.threads, min: o.threads },
      ...(loraFile ? { lora: { adapters: [{ filePath: loraFile }] } } : {}),
    });
    return new LlamaLoraPeer(
      async () => {
        await context.dispose();
        await model.dispose();
        await llama.dispose();
      },
      model,
      context,
    );
  }

  /** Greedy continuation of a text prompt (tokenized as Prism does: the model's BOS rule). */
  async greedyText(prompt: string, newTokens: number): Promise<number[]> {
    const sequence = this.context.getSequence();
    try {
      const out: number[] = [];
      for await (const t of sequence.evaluate(this.model.tokenize(prompt, false), GREEDY)) {
        out.push(Number(t));
        if (out.length === newTokens) break;
      }
      return out;
    } finally {
      sequence.dispose();
    }
  }

  /** Output tok/s of one request per prompt, all at once, each making `newTokens` tokens. */
  async throughput(prompts: readonly string[], newTokens: number): Promise<number> {
    const sequences = prompts.map(() => this.context.getSequence());
    try {
      const started = performance.now();
      let tokens = 0;
      await Promise.all(
        sequences.map(async (s, i) => {
          let n = 0;
          for await (const _ of s.evaluate(this.model.tokenize(prompts[i]!, false) as Token[], GREEDY)) {
            if (++n === newTokens) break;
          }
          tokens += n;
        }),
      );
      return tokens / ((performance.now() - started) / 1000);
    } finally {
      for (const s of sequences) s.dispose();
    }
  }

  async dispose(): Promise<void> {
    await this.dispose_();
  }
}
