/**
 * The llama.cpp half of the engine benchmark, through node-llama-cpp's bundled prebuilt CPU
 * binaries (`build: 'never'`: nothing is compiled or downloaded at run time).
 *
 * It also serves as the tokenizer of the benchmark: prompts are tokenized once here and the
 * very same ids are fed to both engines (same GGUF, same vocabulary), so the comparison does
 * not depend on two tokenizers agreeing.
 */
import { getLlama, GgmlType, LlamaLogLevel } from 'node-llama-cpp';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { nowMs } from '../stats.js';
import type { BenchEngine, DecodeTiming, PrefillTiming, TokenIds } from './types.js';

/**
 * Greedy, and keep going through end-of-generation tokens: node-llama-cpp otherwise ends a
 * generation at EOS, while the measures need exactly N tokens of every sequence (Prism's
 * step() does not stop either; `greedy()` applies the stop set itself).
 */
export const GREEDY = { temperature: 0, yieldEogToken: true } as const;

export interface LlamaCppOptions {
  readonly modelPath: string;
  readonly threads: number;
  /** Largest number of concurrent sequences the aggregate measure will ask for. */
  readonly maxSeqs: number;
  /** Longest prompt + generation of one sequence (single stream and prefill). */
  readonly maxContext: number;
  /** Longest prompt + generation of one sequence in the aggregate measure. */
  readonly aggregateContext: number;
  /** Tokens per llama_decode call in the aggregate context: room for every prompt at once. */
  readonly aggregateBatch: number;
}

/**
 * llama.cpp as the engine benchmark's prebuilt peer runs it: node-llama-cpp's
 * prebuilt CPU binary, never built or downloaded at run time, all layers on the CPU.
 */
export async function loadPrebuiltLlamaModel(
  modelPath: string,
  threads: number,
): Promise<{ llama: Llama; model: LlamaModel }> {
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    maxThreads: threads,
    logLevel: LlamaLogLevel.error,
  });
  return { llama, model: await llama.loadModel({ modelPath, gpuLayers: 0 }) };
}

export class LlamaCppEngine implements BenchEngine {
  readonly name = 'llama.cpp';

  private constructor(
    private readonly llama: Llama,
    readonly model: LlamaModel,
    private readonly options: LlamaCppOptions,
    /** One sequence with room for the longest single prompt (decodeSingle, prefill, greedy). */
    private readonly single: LlamaContext,
    /** `maxSeqs` sequences in one context, batched together by node-llama-cpp. */
    private readonly multi: LlamaContext,
    private readonly multiSequences: LlamaContextSequence[],
  ) {}

  static async load(options: LlamaCppOptions): Promise<LlamaCppEngine> {
    const { llama, model } = await loadPrebuiltLlamaModel(options.modelPath, options.threads);
    const threads = { ideal: options.threads, min: options.threads };
    const single = await model.createContext({
      contextSize: options.maxContext,
      // The whole prefill prompt goes in one llama_decode call, like Prism's one step.
      batchSize: options.maxContext,
      sequences: 1,
      threads,
    });
    const multi = await model.createContext({
      contextSize: options.aggregateContext,
      // All prompts of the aggregate measure prefill in one batch; decode batches hold
      // one token per sequence.
      batchSize: Math.max(options.aggregateBatch, options.maxSeqs),
      sequences: options.maxSeqs,
      threads,
    });
    const multiSequences = Array.from({ length: options.maxSeqs }, () => multi.getSequence());
    return new LlamaCppEngine(llama, model, options, single, multi, multiSequences);
  }

  describe(): Record<string, string | number | boolean> {
    return {
      binding: 'node-llama-cpp (prebuilt CPU binary)',
      'llama.cpp release': this.llama.llamaCppRelease.release,
      // ggml's own report of the CPU backend it loaded, e.g. 'AVX2 FMA F16C BMI2 REPACK'.
      'ggml CPU features': [...this.llama.systemInfo.matchAll(/([A-Z0-9_]+) = 1/g)]
        .map((m) => m[1])
        .join(' '),
      build: this.llama.buildType,
      threads: this.single.currentThreads,
      'flash attention': String(this.single.flashAttention),
      'KV type': `${GgmlType[this.single.kvCacheKeyType]}/${GgmlType[this.single.kvCacheValueType]}`,
      'single-context batch': this.single.batchSize,
      'aggregate-context batch': this.multi.batchSize,
    };
  }

  tokenize(text: string, specialTokens: boolean): number[] {
    return this.model.tokenize(text, specialTokens).map(Number);
  }

  detokenize(ids: TokenIds): string {
    return this.model.detokenize(ids as Token[], false);
  }

  /** Ids that end a generation (end of sequence / end of turn). */
  stopTokens(): Set<number> {
    const ids = [this.model.tokens.eos, this.model.tokens.eot].filter((t): t is Token => t !== null);
    return new Set(ids.map(Number));
  }

  chatTemplate(): string | undefined {
    const tokenizer = this.model.fileInfo.metadata.tokenizer as { chat_template?: unknown } | undefined;
    return typeof tokenizer?.chat_template === 'string' ? tokenizer.chat_template : undefined;
  }

  async decodeSingle(prompt: TokenIds, newTokens: number): Promise<DecodeTiming> {
    const sequence = await this.freshSingleSequence();
    try {
      const generated: number[] = [];
      let firstAt = 0;
      for await (const token of sequence.evaluate(prompt as Token[], GREEDY)) {
        generated.push(Number(token));
        if (generated.length === 1) firstAt = nowMs();
        if (generated.length === newTokens) break;
      }
      const decodeMs = nowMs() - firstAt;
      return { decodedTokens: newTokens - 1, decodeMs, generated: [generated] };
    } finally {
      sequence.dispose();
    }
  }

  async decodeAggregate(prompts: readonly TokenIds[], newTokens: number): Promise<DecodeTiming> {
    if (prompts.length > this.multiSequences.length) {
      throw new RangeError(
        `decodeAggregate: ${prompts.length} prompts but the context has ${this.multiSequences.length} sequences`,
      );
    }
    const sequences = this.multiSequences.slice(0, prompts.length);
    await Promise.all(sequences.map((s) => s.clearHistory()));
    const generators = sequences.map((s, i) => s.evaluate(prompts[i] as Token[], GREEDY));
    const generated: number[][] = prompts.map(() => []);
    // Untimed: every prompt prefilled (node-llama-cpp batches them) up to its first token.
    const first = await Promise.all(generators.map((g) => g.next()));
    first.forEach((r, i) => {
      if (r.done) throw new Error(`llama.cpp sequence ${i} ended during prefill`);
      generated[i].push(Number(r.value));
    });
    // Timed: every sequence asks for its next token in the same tick, so each llama_decode
    // call holds one token per sequence, until all have `newTokens`.
    const start = nowMs();
    await Promise.all(
      generators.map(async (g, i) => {
        while (generated[i].length < newTokens) {
          const r = await g.next();
          if (r.done) throw new Error(`llama.cpp sequence ${i} ended after ${generated[i].length} tokens`);
          generated[i].push(Number(r.value));
        }
        await g.return(undefined);
      }),
    );
    const decodeMs = nowMs() - start;
    return { decodedTokens: prompts.length * (newTokens - 1), decodeMs, generated };
  }

  async prefill(prompt: TokenIds): Promise<PrefillTiming> {
    const sequence = await this.freshSingleSequence();
    try {
      const generator = sequence.evaluate(prompt as Token[], GREEDY);
      const start = nowMs();
      const r = await generator.next();
      const prefillMs = nowMs() - start;
      await generator.return(undefined);
      if (r.done) throw new Error('llama.cpp produced no token after the prefill prompt');
      return { promptTokens: prompt.length, prefillMs, firstToken: Number(r.value) };
    } finally {
      sequence.dispose();
    }
  }

  async greedy(prompt: TokenIds, maxTokens: number, stopTokens: ReadonlySet<number>): Promise<number[]> {
    const sequence = await this.freshSingleSequence();
    try {
      const out: number[] = [];
      for await (const token of sequence.evaluate(prompt as Token[], GREEDY)) {
        if (stopTokens.has(Number(token))) break;
        out.push(Number(token));
        if (out.length === maxTokens) break;
      }
      return out;
    } finally {
      sequence.dispose();
    }
  }

  async dispose(): Promise<void> {
    await this.multi.dispose();
    await this.single.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }

  /** The single context's only sequence, emptied (each measure starts from no cached tokens). */
  private async freshSingleSequence(): Promise<LlamaContextSequence> {
    const sequence = this.single.getSequence();
    await sequence.clearHistory();
    return sequence;
  }

  get threads(): number {
    return this.options.threads;
  }
}
