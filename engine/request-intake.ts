/**
 * Request intake (vLLM v1's input processor): everything between `Engine.generate` and the
 * scheduler's queue. The checks that need no tokenizer run at once (a bad request fails
 * before any work); then the prompt is tokenized off the JS thread (the tokenizer's async
 * encode runs on the libuv pool — inline, a long prompt would block every other stream's
 * tokens for milliseconds) while a constrained request's grammar compiles on the grammar
 * thread; then the request is admitted: its choices, its first sequence and its live state
 * are built and handed to the step loop. Errors, early or late, end the returned stream.
 */
import { randomUUID } from 'node:crypto';
import { BeamSearch, candidatesPerBeam, type BeamSearchOptions } from './beam-search.js';
import type { AdapterEntry, AdapterManager } from './adapters/manager.js';
import { ChoiceOutput } from './choice-output.js';
import { checkOutputFits } from './context-fit.js';
import type { EngineMetrics } from './engine-metrics.js';
import { EngineError, invalidArgument } from './errors.js';
import { EventQueue } from './event-queue.js';
import type { LiveRequest, RequestTable } from './live-request.js';
import type { ResolvedEngineOptions } from './options.js';
import { checkMessages, checkTokenIds, promptTokens, type EngineTokenizer } from './prompt.js';
import { startRequestSpans, type RequestSpans } from './request-spans.js';
import { resolveParams, type ResolvedParams } from './sampling-params.js';
import { Sequence, type SequenceSampling } from './sequence.js';
import type { GrammarConstraint } from './structured/constraint.js';
import type { StructuredOutput } from './structured/engine-glue.js';
import { ChatOutputStream, type ChatParsing } from './tools/chat-output.js';
import type { EngineChat } from './tools/engine-chat.js';
import type { ChatRenderExtras, ChatMessage, GenerateEvent, GenerateRequest } from './types.js';
import type { Disaggregation, PdState } from './kv-transfer/engine-glue.js';

export interface IntakeDeps {
  readonly tokenizer: EngineTokenizer;
  readonly options: ResolvedEngineOptions;
  /** The served model's name: a request naming it (or nothing) gets the base model. */
  readonly modelName: string;
  /** Chat template that replaces the model's own. */
  readonly chatTemplate: string | undefined;
  readonly chat: EngineChat;
  readonly structured: StructuredOutput;
  readonly adapters: AdapterManager | undefined;
  readonly table: RequestTable;
  readonly metrics: EngineMetrics;
  /** The tokenizer's end-of-sequence ids (a choice stops on them unless ignore_eos). */
  readonly eos: ReadonlySet<number>;
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
  /** Split prefill/decode: checks a request's kv_transfer and role, and gives its state. */
  readonly disaggregation: Disaggregation;
}

/** A request that passed the checks that need no tokenizer. */
interface AcceptedRequest {
  readonly id: string;
  readonly params: ResolvedParams;
  /** How each choice's chat output is parsed, once the prompt is rendered; null: as is. */
  parsing: ChatParsing | null;
  /** The adapter it names, with its prefix-cache identity; entry null = base model. */
  readonly adapter: { entry: AdapterEntry | null; cacheExtra: string };
  readonly constraint: GrammarConstraint | null;
  /** Its half of a split prefill/decode request; undefined for a whole request. */
  readonly pd: PdState | undefined;
}

export function asEngineError(e: unknown): EngineError {
  return e instanceof EngineError
    ? e
    : new EngineError('GENERATION_FAILED', `request failed: ${e instanceof Error ? e.message : String(e)}`);
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
    // A constrained request waits for its grammar here, outside the scheduler (its own
    // waiting state), so a slow compile never holds up the batch.
    Promise.all([
      promptTokens(
        d.tokenizer,
        request.prompt,
        accepted.params.truncate,
        d.options,
        d.chatTemplate,
        (chat) => {
          const rendered = d.chat.render(chat);
          accepted.parsing = rendered.parsing;
          return rendered.text;
        },
      ),
      accepted.constraint ? d.chat.compile(accepted.constraint, (c) => d.structured.compile(c)) : null,
    ]).then(
      ([prompt, grammarKey]) => {
        d.table.release(id);
        // Nobody reads the stream any more: do not start the work at all.
        if (abandoned || d.closed())
          this.endUnadmitted(queue, spans, new EngineError('CANCELLED', `request '${id}' was cancelled`));
        else this.admit(accepted, prompt, grammarKey, queue, spans, arrival, signal);
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

  /** The checks that need no tokenizer: engine state, request shape, request id, parameters. */
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
    const constraint = d.chat.constraint(
      request.prompt,
      request.constraint === undefined || request.constraint === null
        ? null
        : d.structured.check(request.constraint),
    );
    // A grammar that is complete allows only the end of the output, which min_tokens would forbid.
    if (constraint && params.minTokens > 0)
      throw invalidArgument(
        'params.min_tokens',
        'must be 0 with a constraint (response_format, guided decoding or tools): the grammar decides where the output ends',
      );
    // The CUDA sampler does not take the suppressed-token list min_tokens needs (yet).
    if (params.minTokens > 0 && d.options.device?.startsWith('cuda'))
      throw new EngineError(
        'UNIMPLEMENTED',
        'min_tokens is not supported on the CUDA backend',
        'params.min_tokens',
      );
    this.checkQueueRoom();
    d.disaggregation.check(request);
    return { id, params, parsing: null, adapter, constraint, pd: d.disaggregation.stateFor(request) };
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

  /** Builds a tokenized request's live state and first sequence, and hands them on. */
  private admit(
    accepted: AcceptedRequest,
    prompt: number[],
    grammarKey: string | null,
    queue: EventQueue<GenerateEvent>,
    spans: RequestSpans | undefined,
    arrival: number,
    signal: AbortSignal | undefined,
  ): void {
    const { id, params, adapter } = accepted;
    const d = this.deps;
    // Not rechecked: `stopping` (a request accepted before drain() still runs, and drain
    // waits for it). Rechecked: the queue bound, which other requests may have filled, and
    // the adapter, which may have been unloaded while the prompt was tokenized.
    try {
      this.checkQueueRoom();
      if (adapter.entry && adapter.entry.state !== 'loaded') {
        throw new EngineError('NOT_FOUND', `Model ${adapter.entry.name} not found.`, 'adapter');
      }
      checkOutputFits(params, prompt.length, d.options);
      // Beams are not resampled one by one: their outputs could not be checked.
      if (params.beam && grammarKey !== null && d.structured.holdsOutput(grammarKey))
        throw invalidArgument(
          'params.use_beam_search',
          'cannot be combined with a schema the grammar enforces only in part (checked on the document): use strict: true or sampling',
        );
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
    const maxNew = Math.min(params.maxNewTokens, d.options.maxSeqLen - prompt.length);
    const beamOptions = params.beam ? this.beamOptions(params, maxNew) : null;
    const seq = new Sequence({
      requestId: id,
      prompt,
      sampling: sequenceSampling(params, beamOptions, this.endTokens(params)),
      arrival,
      forkInto: !beamOptions && params.bestOf > 1 ? params.bestOf : 0,
      cacheExtra: adapter.cacheExtra,
    });
    seq.adapterGeneration = adapter.entry?.generation ?? 0; // the scheduler gives it a slot
    if (beamOptions) {
      seq.beam = true;
      seq.reservedSlots = beamOptions.width - 1;
    }
    d.adapters?.acquire(adapter.entry);
    // Jump-forward appends tokens without a logprob: off for logprobs, best_of ranking and beams.
    if (grammarKey !== null)
      d.structured.attach(seq, grammarKey, !params.logprobs && params.bestOf <= params.n && !beamOptions);
    const req: LiveRequest = {
      id,
      params,
      promptLen: prompt.length,
      maxNew,
      arrival,
      queue,
      seqs: [seq],
      // Beam search: placeholders until the search ends (they carry a cancel or failure).
      choices: Array.from({ length: beamOptions ? params.n : params.bestOf }, (_, i) => makeChoice(i)),
      makeChoice,
      // Held back: best_of > n or beams (the best n are sent), or outputs checked when a choice
      // ends (a choice that fails is sampled again, so nothing of it may have been sent).
      buffered:
        params.bestOf > params.n ||
        beamOptions !== null ||
        (grammarKey !== null && d.structured.holdsOutput(grammarKey)),
      beams: beamOptions ? new BeamSearch(beamOptions, seq) : null,
      firstScheduled: -1,
      firstToken: -1,
      cachedPromptTokens: 0,
      detachSignal: () => {},
      spans,
      adapter: adapter.entry,
      ...(accepted.pd ? { pd: accepted.pd } : {}),
    };
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

  /** How a beam search request ends its beams and what its beams report. */
  private beamOptions(params: ResolvedParams, maxNew: number): BeamSearchOptions {
    const beam = params.beam!;
    const tok = this.deps.tokenizer;
    const endTokens = new Set(this.endTokens(params));
    const stop = params.stop;
    return {
      width: beam.width,
      lengthPenalty: beam.lengthPenalty,
      earlyStopping: beam.earlyStopping,
      maxNew,
      minTokens: params.minTokens,
      endTokens,
      stopsAt:
        stop.length === 0
          ? null
          : (tokens) => {
              const text = tok.decode(tokens, { skipSpecialTokens: params.skipSpecialTokens });
              return stop.some((s) => text.includes(s));
            },
      keepAlternatives: params.logprobs ? params.topLogprobs : 0,
    };
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
 * The native sampler's settings of a request's first sequence (forks derive theirs from it).
 * A beam search's beams are greedy and report their top candidates instead.
 */
function sequenceSampling(
  params: ResolvedParams,
  beams: BeamSearchOptions | null,
  endTokens: readonly number[],
): SequenceSampling {
  if (beams) {
    return {
      temperature: 0,
      topK: 0,
      topP: 1,
      repetitionPenalty: params.repetitionPenalty,
      presencePenalty: params.presencePenalty,
      frequencyPenalty: params.frequencyPenalty,
      seed: BigInt(params.seed),
      topLogprobs: candidatesPerBeam(beams),
    };
  }
  return {
    minTokens: params.minTokens,
    endTokens: endTokens,
    temperature: params.temperature,
    topK: params.topK,
    topP: params.topP,
    repetitionPenalty: params.repetitionPenalty,
    presencePenalty: params.presencePenalty,
    frequencyPenalty: params.frequencyPenalty,
    seed: BigInt(params.seed),
    // Always ask for the chosen token's logprob: finish events carry the cumulative logprob.
    topLogprobs: params.logprobs ? params.topLogprobs : 0,
  };
}
