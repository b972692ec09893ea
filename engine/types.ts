/**
 * The engine's in-process API: what the gRPC service (engine/service/) and the CLI's
 * `generate` command call. One request in, a stream of events out. The gRPC messages in
 * proto/ mirror these records; the mapping lives in one file on the service side.
 */

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
}

/** Exactly one prompt form per request. */
export type PromptInput =
  | { readonly kind: 'text'; readonly text: string; readonly addSpecialTokens?: boolean }
  | { readonly kind: 'tokens'; readonly ids: readonly number[] }
  | {
      readonly kind: 'chat';
      readonly messages: readonly ChatMessage[];
      /** Default true: end the prompt with the assistant turn opener. */
      readonly addGenerationPrompt?: boolean;
    };

/**
 * Generation parameters after gateway validation. Absent fields take the engine defaults
 * (engine/request-defaults.ts); the engine validates ranges again (one place: engine/validate.ts)
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
  /** Number of returned sequences. */
  readonly n?: number;
  /** Sequences generated to pick the `n` best (by cumulative logprob); >= n. */
  readonly bestOf?: number;
  /** Keep only the last `truncate` prompt tokens. */
  readonly truncate?: number;
  readonly skipSpecialTokens?: boolean;
  readonly includeStopStrInOutput?: boolean;
}

export interface GenerateRequest {
  /** Caller-chosen id (unique among live requests); the engine makes one when absent. */
  readonly requestId?: string;
  readonly prompt: PromptInput;
  readonly params: SamplingParams;
}

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

export interface TokenLogprob {
  readonly tokenId: number;
  readonly text: string;
  readonly logprob: number;
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
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens whose KV came from the prefix cache. */
  readonly cachedPromptTokens: number;
}

export interface Timings {
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
}

export type GenerateEvent = TokenEvent | FinishEvent;
