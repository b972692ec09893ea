/**
 * The engine of a pooling model (an embedder, a cross-encoder, a reranking decoder): the same
 * `Engine` the gateways hold for a generation model, whose `pool` serves embeddings, token
 * embeddings, scores and classification and whose `generate` is refused with a 400 naming the
 * model. A request is checked (validate.ts), tokenized and held to the model's limit
 * (inputs.ts), run as requests of its backend's generation engine — whose intake and
 * scheduler pack the inputs of many requests into steps within the step budget, by priority
 * under the priority policy (core-inputs.ts): an encoder's own engine over its runner, no KV
 * (encoder-backend.ts), or a decoder's generation engine (decoder-pooling.ts) — and its
 * outputs finished (outputs.ts). Nothing is decoded and no KV is kept past a request.
 */
import { randomUUID } from 'node:crypto';
import { EngineError, notAGenerationModel } from '../errors.js';
import { BUCKETS, Histogram } from '../engine-metrics.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type {
  AdapterList,
  ChatMessage,
  DecodeResult,
  Engine,
  EngineInfo,
  EngineStatus,
  GenerateEvent,
  GenerateRequest,
} from '../types.js';
import type { EngineRole, RoleState } from '../pd-types.js';
import type { InputRunner, PoolingBackend } from './backend.js';
import { prepareInputs, type InputContext } from './inputs.js';
import { finishOutputs } from './outputs.js';
import type { RerankPrompt } from './rerank-prompt.js';
import type { PoolingRequest, PoolingResult, PoolingStats } from './types.js';
import { validatePoolingRequest, type PoolingLimits } from './validate.js';

export interface PoolingEngineParts {
  readonly backend: PoolingBackend;
  readonly tokenizer: Tokenizer;
  readonly modelName: string;
  readonly modelPath: string;
  readonly lowerCase: boolean;
  readonly rerank?: RerankPrompt;
  /** The engine schedules by priority: a request's `priority` orders its inputs. */
  readonly byPriority: boolean;
  readonly device: string;
  readonly deviceName: string;
}

/** Request latencies of pooling: milliseconds to seconds, not generation's seconds to a minute. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class PoolingEngine implements Engine {
  private readonly queue: InputRunner;
  private readonly limits: PoolingLimits;
  private readonly inputContext: InputContext;
  private readonly live = new Map<string, AbortController>();
  private readonly startedAt = Date.now();
  private readonly engineId = randomUUID();
  private stopping = false;
  private closed = false;
  private readonly counts = { requests: 0, succeeded: 0, failed: 0, inputs: 0, promptTokens: 0 };
  private readonly latency = new Histogram(LATENCY_BUCKETS);
  private readonly idle: (() => void)[] = [];

  constructor(private readonly parts: PoolingEngineParts) {
    const b = parts.backend;
    this.queue = b.inputs;
    this.limits = { card: b.card, vocabSize: b.vocabSize, byPriority: parts.byPriority };
    this.inputContext = {
      card: b.card,
      tokenizer: parts.tokenizer,
      lowerCase: parts.lowerCase,
      tokenTypes: b.tokenTypes,
      ...(parts.rerank ? { rerank: parts.rerank } : {}),
      scoreByCosine: b.card.dimensions > 0 && b.card.labels.length === 0,
    };
  }

  // eslint-disable-next-line require-yield
  async *generate(_request: GenerateRequest, _signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    throw notAGenerationModel(this.parts.modelName, this.parts.backend.card.tasks);
  }

  async pool(request: PoolingRequest, signal?: AbortSignal): Promise<PoolingResult> {
    const field = request.inputField ?? 'input';
    if (this.stopping) throw new EngineError('UNAVAILABLE', 'the engine is stopping');
    const started = performance.now();
    this.counts.requests++;
    const id = request.requestId ?? randomUUID();
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.live.set(id, abort);
    try {
      validatePoolingRequest(request, this.limits, field);
      const inputs = await prepareInputs(request, this.inputContext, field);
      if (abort.signal.aborted) throw new EngineError('CANCELLED', 'the request was cancelled');
      const outputs = await this.queue.submit(inputs, { signal: abort.signal, priority: request.priority });
      const tokenCounts =
        request.task === 'score' && this.inputContext.scoreByCosine
          ? request.inputs.map((_, i) => inputs[2 * i]!.ids.length + inputs[2 * i + 1]!.ids.length)
          : inputs.map((x) => x.ids.length);
      const promptTokens = tokenCounts.reduce((a, b) => a + b, 0);
      this.counts.succeeded++;
      this.counts.inputs += request.inputs.length;
      this.counts.promptTokens += promptTokens;
      const ctx = {
        card: this.parts.backend.card,
        rerank: this.parts.rerank !== undefined,
        scoreByCosine: this.inputContext.scoreByCosine,
      };
      return {
        outputs: finishOutputs(request, ctx, outputs),
        tokenCounts,
        promptTokens,
        ...(request.task === 'classify' ? { labels: this.parts.backend.card.labels } : {}),
      };
    } catch (e) {
      this.counts.failed++;
      throw e;
    } finally {
      this.latency.observe((performance.now() - started) / 1000);
      signal?.removeEventListener('abort', onAbort);
      this.live.delete(id);
      if (this.live.size === 0) for (const done of this.idle.splice(0)) done();
    }
  }

  async cancel(requestId: string): Promise<boolean> {
    const a = this.live.get(requestId);
    a?.abort();
    return a !== undefined;
  }

  async tokenize(text: string, addSpecialTokens = true): Promise<number[]> {
    return this.parts.tokenizer.encodeAsync(text, { addSpecialTokens });
  }

  async detokenize(
    ids: readonly number[],
    skipSpecialTokens = false,
  ): Promise<{ text: string; tokens: string[] }> {
    const t = this.parts.tokenizer;
    return { text: t.decode(ids, { skipSpecialTokens }), tokens: ids.map((id) => t.tokenText(id)) };
  }

  async applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt = true): Promise<string> {
    return this.parts.tokenizer.applyChatTemplate(messages, { addGenerationPrompt });
  }

  poolingStats(): PoolingStats {
    return { ...this.counts, passes: this.queue.passes, latency: this.latency.snapshot() };
  }

  /**
   * The engine its inputs run on — its scheduler's queues and KV pool (an encoder's has no
   * blocks; a decoder's reports the blocks its inputs hold) — with the pooling requests
   * counted apart: generation's counters and latencies stay at zero.
   */
  async status(): Promise<EngineStatus> {
    const core = await this.parts.backend.status();
    const empty = (bounds: readonly number[]) => new Histogram(bounds).snapshot();
    return {
      ...core,
      stopping: this.stopping,
      requestsReceived: 0,
      requestsSucceeded: 0,
      requestsFailed: 0,
      promptTokens: 0,
      generationTokens: 0,
      ttft: empty(BUCKETS.ttft),
      interTokenLatency: empty(BUCKETS.interToken),
      e2eLatency: empty(BUCKETS.e2e),
      promptTokensPerRequest: empty(BUCKETS.tokens),
      generationTokensPerRequest: empty(BUCKETS.tokens),
      recentAvgTtft: 0,
      recentAvgInterToken: 0,
      pooling: this.poolingStats(),
    };
  }

  async info(): Promise<EngineInfo> {
    const b = this.parts.backend;
    return {
      modelName: this.parts.modelName,
      modelPath: this.parts.modelPath,
      architecture: b.architecture,
      vocabSize: b.vocabSize,
      contextLength: b.contextLength,
      maxSeqLen: b.card.maxInputTokens,
      maxInputTokenLen: b.card.maxInputTokens,
      maxNewTokensCap: 0,
      maxBatchSize: b.passBudget.maxInputs,
      maxPrefillTokens: b.passBudget.maxTokens,
      blockSize: 0,
      prefixCache: false,
      dtype: b.dtype,
      startedAt: this.startedAt,
      device: this.parts.device,
      deviceName: this.parts.deviceName,
      engineId: this.engineId,
      modelFingerprint: '',
      images: false,
      pooling: b.card,
    };
  }

  private unsupported(what: string): EngineError {
    return new EngineError('UNIMPLEMENTED', `${what} is not supported for a pooling model`);
  }

  async loadAdapter(): Promise<{ message: string; rank: number; loadMs: number }> {
    throw this.unsupported('LoRA adapters');
  }
  async unloadAdapter(): Promise<{ message: string }> {
    throw this.unsupported('LoRA adapters');
  }
  async listAdapters(): Promise<AdapterList> {
    return { adapters: [], maxLoras: 0, maxLoraRank: 0 };
  }
  async setRole(_role: EngineRole): Promise<RoleState> {
    throw this.unsupported('split prefill/decode');
  }
  // eslint-disable-next-line require-yield
  async *decodeResults(): AsyncIterable<DecodeResult> {
    throw this.unsupported('split prefill/decode');
  }

  async drain(): Promise<void> {
    this.stopping = true;
    if (this.live.size > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopping = true;
    for (const a of this.live.values()) a.abort();
    if (this.live.size > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    await this.parts.backend.dispose();
    (this.parts.tokenizer as { close?: () => void }).close?.();
  }
}
