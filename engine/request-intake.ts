/**
 * Request intake (vLLM v1's input processor): everything between `Engine.generate` and the
 * scheduler's queue. The checks that need no tokenizer run at once (a bad request fails
 * before any work); then the prompt is tokenized off the JS thread (the tokenizer's async
 * encode runs on the libuv pool — inline, a long prompt would block every other stream's
 * tokens for milliseconds) while the extensions prepare their parts (extension.ts); then the
 * request is admitted: its plan, shaped by the extensions, gives its choices, its first
 * sequence and its live state, which are handed to the step loop. Errors, early or late, end
 * the returned stream.
 */
import { randomUUID } from 'node:crypto';
import { deviceCapabilities } from '../native/native.js';
import type { AdapterEntry, AdapterManager } from './adapters/manager.js';
import { ChoiceOutput } from './choice-output.js';
import { checkOutputFits } from './context-fit.js';
import type { EngineMetrics } from './engine-metrics.js';
import { asEngineError, EngineError, invalidArgument } from './errors.js';
import { EventQueue } from './event-queue.js';
import type { RequestPlan } from './extension.js';
import type { ExtensionList, RequestParts } from './extension-list.js';
import type { LiveRequest, RequestTable } from './live-request.js';
import type { ResolvedEngineOptions } from './options.js';
import { checkMessages, checkTokenIds, promptTokens, type EngineTokenizer } from './prompt.js';
import { startRequestSpans, type RequestSpans } from './request-spans.js';
import { resolveParams, type ResolvedParams } from './sampling-params.js';
import { Sequence, type SequenceSampling } from './sequence.js';
import { ChatOutputStream, type ChatParsing } from './tools/chat-output.js';
import type { EngineChat } from './tools/engine-chat.js';
import type { ChatRenderExtras, ChatMessage, GenerateEvent, GenerateRequest } from './types.js';

export interface IntakeDeps {
  readonly tokenizer: EngineTokenizer;
  readonly options: ResolvedEngineOptions;
  /** The served model's name: a request naming it (or nothing) gets the base model. */
  readonly modelName: string;
  /** Chat template that replaces the model's own. */
  readonly chatTemplate: string | undefined;
  readonly chat: EngineChat;
  readonly adapters: AdapterManager | undefined;
  readonly table: RequestTable;
  readonly metrics: EngineMetrics;
  /** The tokenizer's end-of-sequence ids (a choice stops on them unless ignore_eos). */
  readonly eos: ReadonlySet<number>;
  /** The request features (extension.ts): their checks, plans and per-request state. */
  readonly extensions: ExtensionList;
  /** Requests waiting in the scheduler's queue now. */
  waitingCount(): number;
  /** Throws UNAVAILABLE while the engine stops (drain or close). */
  checkAccepting(): void;
  /** The engine is closed: a request tokenized after it is dropped. */
  closed(): boolean;
  /** Hands an admitted request to the step loop (scheduler queue, cancellation signal). */
  admitted(req: LiveRequest, seq: Sequence, signal: AbortSignal | undefined): void;
  /** Cancels a live request whose caller stopped reading. */
  cancel(id: string): void;
}

/** A request that passed the checks that need no tokenizer. */
interface AcceptedRequest {
  readonly id: string;
  readonly params: ResolvedParams;
  /** How each choice's chat output is parsed, once the prompt is rendered; null: as is. */
  parsing: ChatParsing | null;
  /** The adapter it names, with its prefix-cache identity; entry null = base model. */
  readonly adapter: { entry: AdapterEntry | null; cacheExtra: string };
  /** What each extension's check returned for it. */
  readonly parts: RequestParts;
}

const ms = () => performance.now();

export class RequestIntake {
  constructor(private readonly deps: IntakeDeps) {}

  /** `Engine.generate`: the request's event stream, which errors end. */
  submit(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    const arrival = ms();
    let accepted: AcceptedRequest;
    try {
      accepted = this.accept(request);
    } catch (e) {
      const failed = new EventQueue<GenerateEvent>();
      failed.end(asEngineError(e));
      return failed;
    }
    const { id } = accepted;
    const d = this.deps;
    let abandoned = false;
    const queue = new EventQueue<GenerateEvent>(() => {
      abandoned = true;
      d.cancel(id);
    });
    d.table.claim(id);
    // Parented to the span active now: the gRPC server submits inside its RPC span.
    const spans = startRequestSpans({ requestId: id, model: d.modelName, arrival });
    // A request waits for its extensions' preparation here, outside the scheduler (its own
    // waiting state), so a slow one never holds up the batch.
    Promise.all([
      promptTokens(
        d.tokenizer,
        d.extensions.promptInput(request.prompt, accepted.parts),
        accepted.params.truncate,
        d.options,
        d.chatTemplate,
        (chat) => {
          const rendered = d.chat.render(chat);
          accepted.parsing = rendered.parsing;
          return d.extensions.promptText(rendered.text, accepted.parts);
        },
      ),
      ...d.extensions.prepare(accepted.parts),
    ]).then(
      ([prompt]) => {
        d.table.release(id);
        // Nobody reads the stream any more: do not start the work at all.
        if (abandoned || d.closed())
          this.endUnadmitted(queue, spans, new EngineError('CANCELLED', `request '${id}' was cancelled`));
        else this.admit(accepted, prompt, queue, spans, arrival, signal);
      },
      (e: unknown) => {
        d.table.release(id);
        this.endUnadmitted(queue, spans, asEngineError(e));
      },
    );
    return queue;
  }

  /** The checks `submit` starts with, alone (a request handed over from another engine is answered by them). */
  check(request: GenerateRequest): void {
    this.accept(request);
  }

  /**
   * The checks that need no tokenizer: engine state, request shape, request id, parameters,
   * then each extension's, then the device's and the queue's.
   */
  private accept(request: GenerateRequest): AcceptedRequest {
    const d = this.deps;
    d.checkAccepting();
    if (request === null || typeof request !== 'object')
      throw invalidArgument('request', 'must be an object');
    const id = request.requestId ?? randomUUID();
    if (typeof id !== 'string' || id.length === 0 || id.length > 256)
      throw invalidArgument('request_id', 'must be a string of 1 to 256 characters');
    d.table.checkFree(id);
    const params = resolveParams(request.params ?? {}, {
      vocabSize: d.tokenizer.vocabSize,
      maxNewTokensCap: d.options.maxIterTimes,
      maxN: d.options.maxN,
    });
    d.chat.check(request.prompt);
    const adapter = this.resolveAdapter(request.adapter);
    const parts = d.extensions.check(request, params);
    refuseUnserved(params, d.options.device);
    // vLLM's rule: a priority means something only to the priority policy.
    if (params.priority !== 0 && d.options.schedulingPolicy !== 'priority')
      throw invalidArgument(
        'params.priority',
        `must be 0 unless the engine schedules by priority (--scheduling-policy priority), got ${params.priority}`,
      );
    this.checkQueueRoom();
    return { id, params, parsing: null, adapter, parts };
  }

  private resolveAdapter(name: string | undefined): AcceptedRequest['adapter'] {
    if (name === undefined || name === '' || name === this.deps.modelName) {
      return { entry: null, cacheExtra: '' };
    }
    if (!this.deps.adapters) throw new EngineError('NOT_FOUND', `Model ${name} not found.`, 'adapter');
    return this.deps.adapters.resolve(name);
  }

  private checkQueueRoom(): void {
    const waiting = this.deps.waitingCount();
    const max = this.deps.options.maxQueueSize;
    if (waiting >= max) {
      throw new EngineError(
        'RESOURCE_EXHAUSTED',
        `server is overloaded: ${waiting} requests are waiting (maxQueueSize ${max}); retry later`,
      );
    }
  }

  /** Ends the stream of an accepted request that never reached the scheduler. */
  private endUnadmitted(
    queue: EventQueue<GenerateEvent>,
    spans: RequestSpans | undefined,
    error: EngineError,
  ): void {
    if (error.code === 'CANCELLED') spans?.finish(ms(), { reasons: ['cancelled'], completionTokens: 0 });
    else spans?.finish(ms(), { reasons: ['error'], completionTokens: 0, error: error.message });
    queue.end(error);
    this.deps.table.wake();
  }

  /** Builds a tokenized request's plan, live state and first sequence, and hands them on. */
  private admit(
    accepted: AcceptedRequest,
    prompt: number[],
    queue: EventQueue<GenerateEvent>,
    spans: RequestSpans | undefined,
    arrival: number,
    signal: AbortSignal | undefined,
  ): void {
    const { id, params, adapter, parts } = accepted;
    const d = this.deps;
    try {
      prompt = d.extensions.prompt(prompt, parts);
    } catch (e) {
      this.endUnadmitted(queue, spans, asEngineError(e));
      return;
    }
    const maxNew = Math.min(params.maxNewTokens, d.options.maxSeqLen - prompt.length);
    const endTokens = this.endTokens(params);
    const plan: RequestPlan = {
      sampling: sequenceSampling(params, endTokens),
      forkInto: params.bestOf > 1 ? params.bestOf : 0,
      choices: params.bestOf,
      // best_of > n: held back, the best n are sent at the end.
      buffered: params.bestOf > params.n,
      rankChoices: params.bestOf > params.n,
      // Logprobs are asked for, or best_of ranks by cumulative logprob.
      sampledOnly: params.logprobs || params.bestOf > params.n,
      checkedChoices: false,
      multiToken: true,
      cacheExtra: adapter.cacheExtra,
      wholePrompt: false,
    };
    // Not rechecked: `stopping` (a request accepted before drain() still runs, and drain
    // waits for it). Rechecked: the queue bound, which other requests may have filled, and
    // the adapter, which may have been unloaded while the prompt was tokenized.
    try {
      this.checkQueueRoom();
      if (adapter.entry && adapter.entry.state !== 'loaded') {
        throw new EngineError('NOT_FOUND', `Model ${adapter.entry.name} not found.`, 'adapter');
      }
      checkOutputFits(params, prompt.length, d.options);
      d.extensions.plan(plan, parts, { params, maxNew, endTokens: new Set(endTokens) });
    } catch (e) {
      this.endUnadmitted(queue, spans, asEngineError(e));
      return;
    }
    const makeChoice = (i: number) =>
      new ChoiceOutput(
        i,
        params.seed + i,
        d.tokenizer,
        params,
        d.eos,
        accepted.parsing ? new ChatOutputStream(accepted.parsing) : null,
      );
    const seq = new Sequence({
      requestId: id,
      prompt,
      sampling: plan.sampling,
      arrival,
      forkInto: plan.forkInto,
      cacheExtra: plan.cacheExtra,
      priority: params.priority,
      wholePrompt: plan.wholePrompt,
    });
    seq.adapterGeneration = adapter.entry?.generation ?? 0; // the scheduler gives it a slot
    d.adapters?.acquire(adapter.entry);
    const req: LiveRequest = {
      id,
      params,
      promptLen: prompt.length,
      maxNew,
      arrival,
      queue,
      seqs: [seq],
      choices: Array.from({ length: plan.choices }, (_, i) => makeChoice(i)),
      makeChoice,
      buffered: plan.buffered,
      rankChoices: plan.rankChoices,
      firstScheduled: -1,
      firstToken: -1,
      cachedPromptTokens: 0,
      detachSignal: () => {},
      spans,
      adapter: adapter.entry,
    };
    d.extensions.admit(req, seq, parts, plan);
    d.table.add(req);
    d.metrics.requestsReceived++;
    d.metrics.promptTokens += prompt.length;
    d.admitted(req, seq, signal);
  }

  /** The tokens that end a request's output: its stop ids, and end-of-sequence unless ignore_eos. */
  private endTokens(params: ResolvedParams): number[] {
    const ends = new Set(params.stopTokenIds);
    if (!params.ignoreEos) for (const id of this.deps.eos) ends.add(id);
    return [...ends];
  }

  // The prompt-side RPCs: the same tokenizer and chat rendering as a request's prompt.

  async tokenize(text: string, addSpecialTokens = true): Promise<number[]> {
    if (typeof text !== 'string') throw invalidArgument('text', 'must be a string');
    return this.deps.tokenizer.encodeAsync(text, { addSpecialTokens });
  }

  async detokenize(
    ids: readonly number[],
    skipSpecialTokens = false,
  ): Promise<{ text: string; tokens: string[] }> {
    const tok = this.deps.tokenizer;
    const checked = checkTokenIds(ids, tok.vocabSize, 'ids');
    return {
      text: tok.decode(checked, { skipSpecialTokens }),
      tokens: checked.map((id) => tok.tokenText(id)),
    };
  }

  async applyChatTemplate(
    messages: readonly ChatMessage[],
    addGenerationPrompt = true,
    extras: ChatRenderExtras = {},
  ): Promise<string> {
    // The same rendering as a chat request with these messages, tools and template variables.
    checkMessages(messages, 'messages');
    const prompt = { kind: 'chat' as const, messages, addGenerationPrompt, ...extras };
    this.deps.chat.check(prompt);
    return this.deps.chat.render(prompt, 'messages').text;
  }
}

/**
 * Sampling fields a device's sampler may lack (CUDA's, for now), with the backend capability
 * that serves each; refused naming the field.
 */
const SAMPLER_FIELDS: readonly [
  field: string,
  capability: 'minTokens' | 'samplerWarpers',
  used: (p: ResolvedParams) => boolean,
][] = [
  ['min_tokens', 'minTokens', (p) => p.minTokens > 0],
  ['logit_bias', 'samplerWarpers', (p) => p.logitBias !== null],
  ['min_p', 'samplerWarpers', (p) => p.minP > 0],
  ['typical_p', 'samplerWarpers', (p) => p.typicalP < 1],
];

/** Refuses (501) a sampling field the device's sampler does not take. */
function refuseUnserved(params: ResolvedParams, device: string | undefined): void {
  const can = deviceCapabilities(device);
  for (const [field, capability, used] of SAMPLER_FIELDS)
    if (!can[capability] && used(params))
      throw new EngineError(
        'UNIMPLEMENTED',
        `${field} is not supported on device ${device}`,
        `params.${field}`,
      );
}

/** The native sampler's settings of a request's first sequence (forks derive theirs from it). */
function sequenceSampling(params: ResolvedParams, endTokens: readonly number[]): SequenceSampling {
  return {
    minTokens: params.minTokens,
    endTokens: endTokens,
    temperature: params.temperature,
    topK: params.topK,
    topP: params.topP,
    repetitionPenalty: params.repetitionPenalty,
    presencePenalty: params.presencePenalty,
    frequencyPenalty: params.frequencyPenalty,
    minP: params.minP,
    typicalP: params.typicalP,
    ...(params.logitBias ? { logitBias: params.logitBias } : {}),
    seed: BigInt(params.seed),
    // Always ask for the chosen token's logprob: finish events carry the cumulative logprob.
    topLogprobs: params.logprobs ? params.topLogprobs : 0,
  };
}
