/**
 * The Prism half of the engine benchmark: drives the native core directly with
 * `createContext` + `step(plan)` — no scheduler, no gRPC — so the numbers are the compute
 * core's own. The addon is imported lazily so that the llama.cpp half can run (and say so)
 * on a checkout where the addon has not been built yet.
 */
import type { ContextHandle, ContextInfo, ModelHandle, ModelInfo } from '../../native/native.js';
import { nowMs } from '../stats.js';
import { BlockPool, greedyPlan, type SeqChunk } from './plan.js';
import type { BenchEngine, DecodeTiming, PrefillTiming, TokenIds } from './types.js';

type Native = typeof import('../../native/native.js');

export interface PrismOptions {
  readonly modelPath: string;
  readonly threads: number;
  readonly maxSeqs: number;
  /** Tokens per KV block (the engine's default `cacheBlockSize` is 128). */
  readonly blockSize: number;
  /** Longest prompt + generation of one sequence (single stream, prefill, greedy). */
  readonly maxContext: number;
  /** Longest prompt + generation of one sequence in the aggregate measure. */
  readonly aggregateContext: number;
  /** Upper bound on tokens per step: room for a whole prefill prompt or all aggregate prompts. */
  readonly maxBatchTokens: number;
}

/** Loads the addon, or explains why it is not there. */
export async function loadNative(): Promise<Native> {
  try {
    return await import('../../native/native.js');
  } catch (e) {
    throw new Error(`Prism's native core is not available (${(e as Error).message})`);
  }
}

export class PrismEngine implements BenchEngine {
  readonly name = 'prism';
  private readonly pool: BlockPool;
  private readonly pagesPerBlock: number;

  private constructor(
    private readonly native: Native,
    private readonly model: ModelHandle,
    readonly info: ModelInfo,
    private readonly ctx: ContextHandle,
    readonly ctxInfo: ContextInfo,
    private readonly options: PrismOptions,
  ) {
    this.pagesPerBlock = info.kvLayout.pagesPerBlock;
    this.pool = new BlockPool(Math.floor(ctxInfo.kvBlocks / this.pagesPerBlock));
  }

  /** A plan over the pool's blocks, each `pagesPerBlock` pages of the native pool. */
  private plan(chunks: readonly SeqChunk[]) {
    return greedyPlan(chunks, this.options.blockSize, this.pagesPerBlock);
  }

  static async load(native: Native, options: PrismOptions): Promise<PrismEngine> {
    const model = await native.loadModel(options.modelPath);
    const info = native.modelInfo(model);
    const blocksFor = (positions: number) => Math.ceil(positions / options.blockSize);
    const kvBlocks = Math.max(
      blocksFor(options.maxContext),
      options.maxSeqs * blocksFor(options.aggregateContext),
    );
    const ctx = native.createContext(model, {
      // The native pool counts pages (a model with layer groups takes several per block).
      kvBlocks: kvBlocks * info.kvLayout.pagesPerBlock,
      blockSize: options.blockSize,
      maxBatchTokens: options.maxBatchTokens,
      maxSeqs: options.maxSeqs,
      threads: options.threads,
    });
    return new PrismEngine(native, model, info, ctx, native.contextInfo(ctx), options);
  }

  describe(): Record<string, string | number | boolean> {
    const t = this.ctxInfo.decodeTuning;
    const how = t && [
      t.source,
      ...(t.measuredMs > 0 ? [`measured in ${t.measuredMs.toFixed(0)} ms`] : []),
      ...(t.ratioToDefault !== 1 ? [`step time ${t.ratioToDefault.toFixed(3)}× the constants'`] : []),
    ];
    const host = this.native.hostInfo();
    return {
      binding: 'native core (createContext + step)',
      // Batches of 16+ tokens (prefill) run on AMX-INT8 tiles where the host has them (13+ for
      // the exact-integer int16 layouts of models below hidden 1024).
      isa: this.amxLabel(),
      threads: this.ctxInfo.threads,
      ...(t && how ? { 'decode tuning': `${t.setting} (${how.join(', ')})` } : {}),
      host: host.description,
      'huge pages': `${(host.anonHugeBytes / 2 ** 20).toFixed(0)} MiB of anonymous memory on huge pages, weights ${(this.info.residentWeightBytes / 2 ** 20).toFixed(0)} MiB held`,
      'KV blocks': `${this.pool.capacity} × ${this.ctxInfo.blockSize} tokens`,
      'KV MiB': +(this.ctxInfo.kvBytes / 2 ** 20).toFixed(1),
      'max batch tokens': this.options.maxBatchTokens,
    };
  }

  /** The ISA, and whether AMX prefill is on (cpuFeatures; PRISM_AMX=0 turns it off). */
  private amxLabel(): string {
    const f = this.native.cpuFeatures();
    if (!f.amxPrefill) return this.ctxInfo.isa;
    return `${this.ctxInfo.isa} + AMX int8 prefill`;
  }

  async decodeSingle(prompt: TokenIds, newTokens: number): Promise<DecodeTiming> {
    const [generated] = await this.prefillSequences([prompt], newTokens);
    const blocks = this.sequenceBlocks[0];
    const start = nowMs();
    for (let i = 1; i < newTokens; i++) {
      const chunk: SeqChunk = {
        tokens: [generated[i - 1]],
        startPosition: prompt.length + i - 1,
        blocks,
        sample: true,
      };
      const result = await this.native.step(this.ctx, this.plan([chunk]));
      generated.push(result.tokens[0]);
    }
    const decodeMs = nowMs() - start;
    return { decodedTokens: newTokens - 1, decodeMs, generated: [generated] };
  }

  async decodeAggregate(prompts: readonly TokenIds[], newTokens: number): Promise<DecodeTiming> {
    if (prompts.length > this.options.maxSeqs) {
      throw new RangeError(
        `decodeAggregate: ${prompts.length} prompts but the context takes ${this.options.maxSeqs} sequences`,
      );
    }
    const generated = await this.prefillSequences(prompts, newTokens);
    const start = nowMs();
    for (let i = 1; i < newTokens; i++) {
      const chunks = prompts.map((p, s): SeqChunk => ({
        tokens: [generated[s][i - 1]],
        startPosition: p.length + i - 1,
        blocks: this.sequenceBlocks[s],
        sample: true,
      }));
      const result = await this.native.step(this.ctx, this.plan(chunks));
      for (let s = 0; s < prompts.length; s++) generated[s].push(result.tokens[s]);
    }
    const decodeMs = nowMs() - start;
    return { decodedTokens: prompts.length * (newTokens - 1), decodeMs, generated };
  }

  async prefill(prompt: TokenIds): Promise<PrefillTiming> {
    this.pool.reset();
    const blocks = this.pool.take(Math.ceil((prompt.length + 1) / this.options.blockSize));
    const start = nowMs();
    let firstToken = -1;
    // One step when the prompt fits `maxBatchTokens`, else chunks (only the last one samples).
    for (let at = 0; at < prompt.length; at += this.options.maxBatchTokens) {
      const tokens = prompt.slice(at, at + this.options.maxBatchTokens);
      const last = at + tokens.length === prompt.length;
      const result = await this.native.step(
        this.ctx,
        this.plan([{ tokens, startPosition: at, blocks, sample: last }]),
      );
      if (last) firstToken = result.tokens[0];
    }
    const prefillMs = nowMs() - start;
    return { promptTokens: prompt.length, prefillMs, firstToken };
  }

  async greedy(prompt: TokenIds, maxTokens: number, stopTokens: ReadonlySet<number>): Promise<number[]> {
    const [generated] = await this.prefillSequences([prompt], maxTokens);
    const out: number[] = [];
    let next = generated[0];
    while (!stopTokens.has(next)) {
      out.push(next);
      if (out.length === maxTokens) break;
      const chunk: SeqChunk = {
        tokens: [next],
        startPosition: prompt.length + out.length - 1,
        blocks: this.sequenceBlocks[0],
        sample: true,
      };
      next = (await this.native.step(this.ctx, this.plan([chunk]))).tokens[0];
    }
    return out;
  }

  async dispose(): Promise<void> {
    this.native.disposeContext(this.ctx);
    this.native.disposeModel(this.model);
  }

  /** KV blocks of each sequence of the current measure (set by `prefillSequences`). */
  private sequenceBlocks: number[][] = [];

  /**
   * Untimed set-up shared by the decode measures: fresh KV blocks for every sequence (room
   * for prompt + `newTokens`), then every prompt prefilled in as few steps as
   * `maxBatchTokens` allows, each sampling its sequence's first new token.
   */
  private async prefillSequences(prompts: readonly TokenIds[], newTokens: number): Promise<number[][]> {
    this.pool.reset();
    this.sequenceBlocks = prompts.map((p) =>
      this.pool.take(Math.ceil((p.length + newTokens) / this.options.blockSize)),
    );
    const generated: number[][] = prompts.map(() => []);
    let s = 0;
    while (s < prompts.length) {
      const chunks: SeqChunk[] = [];
      const first = s;
      let tokens = 0;
      while (
        s < prompts.length &&
        (chunks.length === 0 || tokens + prompts[s].length <= this.options.maxBatchTokens)
      ) {
        if (prompts[s].length > this.options.maxBatchTokens) {
          throw new RangeError(
            `prompt ${s} has ${prompts[s].length} tokens, more than maxBatchTokens ${this.options.maxBatchTokens}`,
          );
        }
        chunks.push({ tokens: prompts[s], startPosition: 0, blocks: this.sequenceBlocks[s], sample: true });
        tokens += prompts[s].length;
        s++;
      }
      const result = await this.native.step(this.ctx, this.plan(chunks));
      for (let i = 0; i < chunks.length; i++) generated[first + i].push(result.tokens[i]);
    }
    return generated;
  }
}
