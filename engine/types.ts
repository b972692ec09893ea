/**
 * The engine's in-process API: what the gRPC service (engine/service/) and the CLI's
 * `generate` command call. One request in, a stream of events out. The gRPC messages in
 * proto/ mirror these records; the mapping lives in one file on the service side. Ground
 * floor: this file imports only the other records of the API (errors.ts, pd-types.ts), so
 * every layer above may use it and none of its features is needed to read it.
 */
import type { EngineError } from './errors.js';
import type { EngineRole, KvTransferParams, KvTransferSpec, RoleState, RoleStatus } from './pd-types.js';

/**
 * A decoded image as a gateway hands it to the engine: 8-bit RGB, row-major, no alpha (flattened
 * on white as transformers' `convert_to_rgb` does); engine/vision/ reads it.
 */
export interface ImageInput {
  readonly width: number;
  readonly height: number;
  /** width × height × 3 bytes. */
  readonly rgb: Uint8Array;
  /** Where the client sent it (e.g. `messages[0].content[1].image_url`): errors about it name this. */
  readonly field: string;
}

/** One piece of a prompt's content, in order: text, or an image of the request's `images` by index. */
export type ContentPart =
  { readonly type: 'text'; readonly text: string } | { readonly type: 'image'; readonly image: number };

export interface ChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  readonly toolCalls?: readonly ChatToolCall[];
  readonly toolCallId?: string;
  readonly name?: string;
  /**
   * An assistant turn's reasoning sent back: the template gets it as `reasoning_content`
   * (Qwen3's renders it within the current tool-call turn; templates that do not read it drop it).
   */
  readonly reasoningContent?: string;
  /** Its content in order when it holds images (`content` is then the text parts joined; engine/vision/image.ts). */
  readonly parts?: readonly ContentPart[];
}

/** A function the model may call (OpenAI `tools[].function`). */
export interface ChatTool {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters?: Record<string, unknown>;
}

/** `required` and a named function force a call (by grammar, not built yet: refused). */
export type ToolChoice = 'none' | 'auto' | 'required' | { readonly function: string };

/** Exactly one prompt form per request. */
export type PromptInput =
  | {
      readonly kind: 'text';
      readonly text: string;
      readonly addSpecialTokens?: boolean;
      /** The prompt in order when it holds images (`text` is then the text parts joined). */
      readonly parts?: readonly ContentPart[];
    }
  | { readonly kind: 'tokens'; readonly ids: readonly number[] }
  | {
      readonly kind: 'chat';
      readonly messages: readonly ChatMessage[];
      /** Default true: end the prompt with the assistant turn opener. */
      readonly addGenerationPrompt?: boolean;
      /** Tools offered to the model; their calls come back parsed (engine/tools/). */
      readonly tools?: readonly ChatTool[];
      /** Default 'auto' when tools are given. */
      readonly toolChoice?: ToolChoice;
      /** Default true; false keeps only the first call. */
      readonly parallelToolCalls?: boolean;
      /** Extra template variables (vLLM's chat_template_kwargs, e.g. Qwen3's `enable_thinking`). */
      readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
    };

/** What a chat prompt renders besides its messages (Engine.applyChatTemplate). */
export type ChatRenderExtras = Pick<
  Extract<PromptInput, { kind: 'chat' }>,
  'tools' | 'toolChoice' | 'chatTemplateKwargs'
>;

/**
 * Generation parameters after gateway validation. Absent fields take the engine defaults
 * (engine/sampling-params.ts); the engine validates ranges again (one place: engine/sampling-params.ts and engine/prompt.ts)
 * so that gRPC callers get the same INVALID_ARGUMENT errors as HTTP callers.
 */
export interface SamplingParams {
  readonly maxNewTokens?: number;
  /** 0 = greedy. */
  readonly temperature?: number;
  readonly topK?: number;
  readonly topP?: number;
  readonly repetitionPenalty?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
  readonly seed?: number;
  /** false forces greedy whatever the temperature (TGI semantics). */
  readonly doSample?: boolean;
  readonly stop?: readonly string[];
  readonly stopTokenIds?: readonly number[];
  readonly ignoreEos?: boolean;
  /** Report the chosen token's logprob per token. */
  readonly logprobs?: boolean;
  /** Also report this many alternatives per token (implies logprobs). */
  readonly topLogprobs?: number;
  /**
   * Prompt logprobs (vLLM's prompt_logprobs): each prompt token's logprob given the tokens
   * before it, with this many alternatives (0: the token's own only), in the finish events.
   * With it max_new_tokens may be 0: the prompt is scored and nothing generated.
   */
  readonly promptLogprobs?: number;
  /** Number of returned sequences. */
  readonly n?: number;
  /** Sequences generated to pick the `n` best (by cumulative logprob); >= n. */
  readonly bestOf?: number;
  /** Keep only the last `truncate` prompt tokens. */
  readonly truncate?: number;
  readonly skipSpecialTokens?: boolean;
  readonly includeStopStrInOutput?: boolean;
  /** Beam search with `bestOf` beams (default `n`): deterministic, the `n` best beams returned. */
  readonly useBeamSearch?: boolean;
  /** Beam score = cumulative logprob / generated tokens ^ lengthPenalty (default 1). */
  readonly lengthPenalty?: number;
  /** When beam search stops (vLLM / Hugging Face): true, false (default) or 'never'. */
  readonly earlyStopping?: boolean | 'never';
  /** Tokens generated before an end-of-sequence or stop token may end the output (vLLM's min_tokens). */
  readonly minTokens?: number;
  /**
   * Most draft tokens a step verifies for this request's sequences when the engine speculates
   * (llama.cpp server's per-request `speculative.n_max`); 0: none, the request decodes as
   * without speculation. Absent: the engine's num_speculative_tokens. No effect otherwise.
   */
  readonly numSpeculativeTokens?: number;
  /** min-p sampling (0 = off): keep tokens with p >= minP × the most likely token's p. */
  readonly minP?: number;
  /** Locally typical sampling's mass, in (0, 1] (1 = off). */
  readonly typicalP?: number;
  /** Token id → bias added to its logit, in [-100, 100] (OpenAI's logit_bias); at most 300. */
  readonly logitBias?: Readonly<Record<number, number>>;
  /** Words that may not be generated (vLLM's bad_words: each one's tokens, with and without a leading space). */
  readonly badWords?: readonly string[];
  /**
   * Scheduling priority under the engine's `priority` policy: lower is served first, ties by
   * arrival (vLLM's). Absent = 0; a non-zero value is refused under `fcfs`.
   */
  readonly priority?: number;
}

/**
 * Structured output: what every API family's field (`response_format`, `guided_*`,
 * `structured_outputs`, TGI `grammar`) is mapped onto (engine/structured/ enforces it). One
 * request carries at most one.
 */
export type Constraint =
  /** Any JSON object (OpenAI `json_object`; `json_schema` without a schema). */
  | { readonly kind: 'json_object' }
  /**
   * A JSON Schema, as JSON text. `additionalProperties` (and extra array items) default to
   * false where the schema does not say (the spec's rule; xgrammar's strict mode). `strict`
   * (OpenAI's `strict: true`): refused unless the grammar alone enforces the schema exactly;
   * otherwise what it cannot enforce is checked on each finished document.
   */
  | { readonly kind: 'json_schema'; readonly schema: string; readonly strict?: boolean }
  /** A regular expression the whole output must match (xgrammar's regex dialect). */
  | { readonly kind: 'regex'; readonly pattern: string }
  /** The output is exactly one of these strings. */
  | { readonly kind: 'choice'; readonly choices: readonly string[] }
  /** An EBNF grammar in xgrammar's (GBNF-like) notation, rule `root` first. */
  | { readonly kind: 'grammar'; readonly ebnf: string };

export interface GenerateRequest {
  /** Caller-chosen id (unique among live requests); the engine makes one when absent. */
  readonly requestId?: string;
  readonly prompt: PromptInput;
  readonly params: SamplingParams;
  /** LoRA adapter name; absent, empty or the served model's name = the base model. */
  readonly adapter?: string;
  /** Structured output: every sequence's text must match it (engine/structured/). */
  readonly constraint?: Constraint;
  /** Split prefill/decode: how this request takes part (engine/kv-transfer/); absent = computed here. */
  readonly kvTransfer?: KvTransferSpec;
  /** Decoded images the prompt's content parts name by index (engine/vision/). */
  readonly images?: readonly ImageInput[];
}

/** 'tool_calls': the model stopped after calling tools (its output parsed into calls). */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'cancelled' | 'error';

/** One streamed piece of a tool call (OpenAI `delta.tool_calls[]`): the first has id, type and name. */
export interface ToolCallDelta {
  readonly index: number;
  readonly id?: string;
  readonly type?: 'function';
  readonly function: { readonly name?: string; readonly arguments?: string };
}

/** What a token added to a chat answer whose output is parsed (reasoning and/or tools). */
export interface ChatDelta {
  readonly content: string;
  readonly reasoning: string;
  readonly toolCalls: readonly ToolCallDelta[];
}

/** A parsed chat answer: the sum of its ChatDeltas. */
export interface ChatResult {
  readonly content: string;
  readonly reasoningContent: string;
  readonly toolCalls: readonly ChatToolCall[];
  /** Tokens generated inside the think block. */
  readonly reasoningTokens: number;
}

export interface TokenLogprob {
  readonly tokenId: number;
  readonly text: string;
  readonly logprob: number;
  readonly top: readonly { readonly tokenId: number; readonly text: string; readonly logprob: number }[];
}

/**
 * One prompt token's logprob given the tokens before it (the model's raw distribution: no
 * penalty, temperature or mask). The first prompt token has none (null): nothing precedes it.
 */
export interface PromptTokenLogprob {
  readonly tokenId: number;
  readonly text: string;
  readonly logprob: number | null;
  /** 1 + the tokens the model found more likely; null with the logprob. */
  readonly rank: number | null;
  /** The most likely tokens at its position, best first (params.promptLogprobs of them). */
  readonly top: readonly { readonly tokenId: number; readonly text: string; readonly logprob: number }[];
}

/** Incremental output of one sequence (choice `index`). `text` never splits a UTF-8 character. */
export interface TokenEvent {
  readonly type: 'token';
  readonly requestId: string;
  readonly index: number;
  readonly tokenIds: readonly number[];
  readonly text: string;
  readonly logprobs?: readonly TokenLogprob[];
  /** Chat prompts whose output is parsed (tools, reasoning): the parsed pieces of `text`. */
  readonly chat?: ChatDelta;
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens whose KV came from the prefix cache. */
  readonly cachedPromptTokens: number;
}

interface Timings {
  readonly queueMs: number;
  readonly prefillMs: number;
  readonly decodeMs: number;
  readonly ttftMs: number;
}

export interface FinishEvent {
  readonly type: 'finish';
  readonly requestId: string;
  readonly index: number;
  readonly reason: FinishReason;
  /** Full generated text of this sequence (stop string excluded unless asked). */
  readonly text: string;
  readonly tokenIds: readonly number[];
  readonly cumulativeLogprob: number;
  readonly usage: Usage;
  readonly timings: Timings;
  readonly seed: number;
  readonly error?: string;
  /** Chat prompts whose output is parsed (tools, reasoning): the parsed answer. */
  readonly chat?: ChatResult;
  /** Milliseconds between consecutive tokens (MindIE `decode_time_arr`), one per token after the first. */
  readonly decodeTimesMs?: readonly number[];
  /** Split prefill/decode: the request continues on another engine (vLLM's kv_transfer_params). */
  readonly kvTransfer?: KvTransferParams;
  /** params.promptLogprobs: one per prompt token, in order (engine/prompt-logprobs/). */
  readonly promptLogprobs?: readonly PromptTokenLogprob[];
}

export type GenerateEvent = TokenEvent | FinishEvent;

/** A cumulative histogram snapshot (Prometheus style: counts[i] = observations <= bounds[i]; last = +Inf). */
export interface HistogramSnapshot {
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/**
 * Speculative decoding's counters, as vLLM names them (vllm:spec_decode_*): verify steps that
 * carried a draft, draft tokens proposed, draft tokens accepted, and accepted tokens per
 * draft position (position i counts the steps whose i-th draft token was accepted, so
 * acceptance falls off along the positions).
 */
export interface SpecDecodeStats {
  /** Proposer in use ('ngram' | 'draft' | 'layer-skip'). */
  readonly method: string;
  readonly numDrafts: number;
  readonly numDraftTokens: number;
  readonly numAcceptedTokens: number;
  /** [i] = accepted draft tokens at position i (0-based), up to num_speculative_tokens. */
  readonly acceptedPerPosition: readonly number[];
}

/** Engine state for observability (what the `Status` RPC returns). Times in seconds. */
export interface EngineStatus {
  readonly running: number;
  readonly waiting: number;
  readonly freeBlocks: number;
  readonly totalBlocks: number;
  readonly blockSize: number;
  readonly maxBatchSize: number;
  readonly stopping: boolean;
  readonly requestsReceived: number;
  readonly requestsSucceeded: number;
  readonly requestsFailed: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  /** Prefix-cache lookups and hits, in prompt tokens. */
  readonly prefixCacheQueries: number;
  readonly prefixCacheHits: number;
  readonly preemptions: number;
  readonly ttft: HistogramSnapshot;
  readonly interTokenLatency: HistogramSnapshot;
  readonly e2eLatency: HistogramSnapshot;
  readonly promptTokensPerRequest: HistogramSnapshot;
  readonly generationTokensPerRequest: HistogramSnapshot;
  /** Averages over the latest 1000 finished requests (MindIE /metrics-json), seconds. */
  readonly recentAvgTtft: number;
  readonly recentAvgInterToken: number;
  /** Distinct LoRA adapters of running / waiting requests, and the slot count. */
  readonly runningLoraAdapters: readonly string[];
  readonly waitingLoraAdapters: readonly string[];
  readonly maxLora: number;
  /** Speculative decoding's counters (engine/speculative/); absent when it is off. */
  readonly specDecode?: SpecDecodeStats;
  /** Split prefill/decode (engine/kv-transfer/): the role and whether a change still drains. */
  readonly role: EngineRole;
  readonly roleStatus: RoleStatus;
  /** KV blocks held for other engines to pull, and the KV moved in (pulled) and out (served). */
  readonly leasedBlocks: number;
  readonly kvTransfersIn: number;
  readonly kvBytesIn: number;
  readonly kvTransferMsIn: number;
  readonly kvTokensIn: number;
  readonly kvTransfersOut: number;
  readonly kvBytesOut: number;
  readonly kvTransferFailures: number;
  /** A pooling model's requests (engine/pooling/), counted apart from generation's; absent otherwise. */
  readonly pooling?: PoolingStats;
}

/** Static facts about the served model and limits. */
export interface EngineInfo {
  readonly modelName: string;
  readonly modelPath: string;
  readonly architecture: string;
  readonly vocabSize: number;
  readonly contextLength: number;
  readonly maxSeqLen: number;
  readonly maxInputTokenLen: number;
  readonly maxNewTokensCap: number;
  readonly maxBatchSize: number;
  readonly maxPrefillTokens: number;
  readonly blockSize: number;
  readonly prefixCache: boolean;
  readonly dtype: string;
  readonly startedAt: number;
  /** 'cpu' or 'cuda:N' (EngineOptions.device), and the device in words ('NVIDIA H200', 'CPU (avx512)'). */
  readonly device: string;
  readonly deviceName: string;
  /** This engine process's id (vLLM's engine_id) and its model's fingerprint (engine/kv-transfer/fingerprint.ts). */
  readonly engineId: string;
  readonly modelFingerprint: string;
  /** A pooling model's card (what it serves: embed, score, ...); absent for a generation model. */
  readonly pooling?: PoolingCard;
  /** Whether the model takes images (a vision-language model with its image encoder). */
  readonly images: boolean;
}

/**
 * The engine as its callers see it — implemented in-process by engine/engine-core.ts and over
 * gRPC by the engine client, so gateways and the CLI don't care which one they hold.
 * Errors are EngineErrors (engine/errors.ts): thrown from the calls, or from the iterator.
 */
/** A loaded LoRA adapter, as ListAdapters reports it. */
interface AdapterCard {
  readonly name: string;
  readonly path: string;
  readonly rank: number;
  /** Increases with every load: part of the prefix-cache key of its requests. */
  readonly generation: number;
  readonly activeRequests: number;
  /** Milliseconds since the Unix epoch. */
  readonly loadedAt: number;
}

export interface AdapterList {
  readonly adapters: readonly AdapterCard[];
  readonly maxLoras: number;
  readonly maxLoraRank: number;
}

/**
 * One result on a decode engine's results stream (DecodeResults, `GET /dresult`). The first of
 * every stream is `held` (request id ''): from then on this holder gets the results.
 */
export type DecodeResult =
  | { readonly requestId: string; readonly event: GenerateEvent }
  | { readonly requestId: string; readonly error: EngineError }
  | { readonly requestId: ''; readonly held: true };

export interface Engine {
  generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent>;
  /**
   * Embeddings, token embeddings, scores or classification of a pooling model
   * (engine/pooling/); a generation model refuses it (INVALID_ARGUMENT naming the model).
   */
  pool(request: PoolingRequest, signal?: AbortSignal): Promise<PoolingResult>;
  /** Cancels a live request; false when no such request is live. */
  cancel(requestId: string): Promise<boolean>;
  tokenize(text: string, addSpecialTokens?: boolean): Promise<number[]>;
  /** Text of each token, and of the whole sequence. */
  detokenize(
    ids: readonly number[],
    skipSpecialTokens?: boolean,
  ): Promise<{ text: string; tokens: string[] }>;
  /** The prompt text a chat request renders to (with its tools and template variables, when given). */
  applyChatTemplate(
    messages: readonly ChatMessage[],
    addGenerationPrompt?: boolean,
    extras?: ChatRenderExtras,
  ): Promise<string>;
  status(): Promise<EngineStatus>;
  info(): Promise<EngineInfo>;
  /** LoRA adapters: the success message of MindIE/vLLM, or an EngineError with theirs. */
  loadAdapter(name: string, path: string): Promise<{ message: string; rank: number; loadMs: number }>;
  unloadAdapter(name: string): Promise<{ message: string }>;
  listAdapters(): Promise<AdapterList>;
  /** Split prefill/decode: assigns the role (refused while a change still drains). */
  setRole(role: EngineRole): Promise<RoleState>;
  /**
   * Split prefill/decode: the results of the requests handed to this engine, each tagged with
   * its request id (MindIE's `GET /dresult`); one holder at a time, a new one ends the last.
   */
  decodeResults(signal?: AbortSignal): AsyncIterable<DecodeResult>;
  /** Stop admitting requests (new ones fail UNAVAILABLE); resolves when running and queued ones finished. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------
// Pooling requests (engine/pooling/): embeddings, token embeddings, scores, classification.
// One shape for every gateway family and the Embed RPC, checked in one place
// (engine/pooling/validate.ts). Nothing is decoded and no KV is kept past a request.
// ---------------------------------------------------------------------------------------

/** One input: text (tokenized by the model's tokenizer), token ids as given, or a text pair. */
export type PoolingInput =
  | { readonly text: string }
  | { readonly ids: readonly number[] }
  | { readonly pair: readonly [string, string] };

/**
 * embed: one vector per input (the model's pooling). tokens: every token's last hidden
 * state (TEI's embed_all, vLLM's token_embed). score: one relevance score per pair, from a
 * cross-encoder or a reranking decoder, or for an embedder the cosine of the pair's two
 * embeddings (vLLM's /score). classify: the classifier's label scores per input.
 */
export type PoolingTask = 'embed' | 'tokens' | 'score' | 'classify';

export interface PoolingRequest {
  readonly requestId?: string;
  readonly task: PoolingTask;
  readonly inputs: readonly PoolingInput[];
  /**
   * Scheduling priority of its inputs under the engine's `priority` policy (lower first, as
   * a generation request's `params.priority`); absent: 0. Refused unless the engine schedules by priority.
   */
  readonly priority?: number;
  /** The request's own name of its inputs, for errors ('input', 'inputs', 'documents'...); default 'input'. */
  readonly inputField?: string;
  /**
   * An input longer than the model's limit: cut to at most `maxTokens` (default: the model's
   * limit), keeping the start ('right': the end is cut, TEI's default) or the end ('left',
   * vLLM's truncate_prompt_tokens). Absent: such an input is refused, naming it.
   */
  readonly truncate?: { readonly direction: 'left' | 'right'; readonly maxTokens?: number };
  /** L2-normalise vectors (embed); default: the model's own (a Normalize module). */
  readonly normalize?: boolean;
  /** Matryoshka: keep the first `dimensions` values (then normalise); only for models trained so. */
  readonly dimensions?: number;
  /** Add the tokenizer's special tokens ([CLS] .. [SEP], a decoder's EOS); default true. */
  readonly addSpecialTokens?: boolean;
  /**
   * score / classify: apply the model's activation (sigmoid for one label, softmax for several:
   * sentence-transformers' CrossEncoder default); false returns the raw logits (TEI raw_scores).
   */
  readonly activation?: boolean;
}

export interface PoolingResult {
  /**
   * Per input: the vector (embed), [tokens × hidden] row-major (tokens), one score (score) or
   * one value per label (classify).
   */
  readonly outputs: readonly Float32Array[];
  /** Tokens each input ran as (after truncation, special tokens included). */
  readonly tokenCounts: readonly number[];
  readonly promptTokens: number;
  /** classify: the labels, in output order. */
  readonly labels?: readonly string[];
}

/** What a pooling model serves, for gateways to route and describe it (EngineInfo.pooling). */
export interface PoolingCard {
  readonly tasks: readonly PoolingTask[];
  /** 'mean', 'cls', 'lasttoken', ...: the pooling's modes joined with '+'; '' for a scorer. */
  readonly pooling: string;
  /** Values per embedding (before any Matryoshka cut). */
  readonly dimensions: number;
  /** Whether embeddings are normalised unless a request says otherwise. */
  readonly normalize: boolean;
  /** Matryoshka dimensions the model accepts (empty: `dimensions` is refused; [0]: any up to its width). */
  readonly matryoshka: readonly number[];
  /** Longest input in tokens (special tokens included). */
  readonly maxInputTokens: number;
  /** classify / score: the classifier's labels. */
  readonly labels: readonly string[];
}

/** What the pooling requests of an engine add up to (EngineStatus.pooling). */
export interface PoolingStats {
  readonly requests: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly inputs: number;
  readonly promptTokens: number;
  readonly passes: number;
  /** Request latency in seconds. */
  readonly latency: HistogramSnapshot;
}
