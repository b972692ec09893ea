/**
 * The one mapping between the engine's in-process records (engine/types.ts) and the gRPC
 * messages (gen/, from proto/prism/engine/v1/engine.proto), both directions: the server
 * turns requests into engine records and events into messages, the client the reverse.
 *
 * Only the shape is checked here (a prompt is present, a chat role is one of four); every
 * range is validated by the engine itself, so gRPC and in-process callers get the same errors.
 */
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { invalidArgument } from '../errors.js';
import type {
  Constraint,
  ChatMessage,
  ContentPart,
  ImageInput,
  EngineInfo,
  EngineStatus,
  FinishEvent,
  FinishReason,
  GenerateEvent,
  GenerateRequest,
  HistogramSnapshot,
  PromptInput,
  SamplingParams,
  TokenEvent,
  TokenLogprob,
} from '../types.js';
import { ENGINE_ROLES, type EngineRole } from '../pd-types.js';
import {
  poolingCardFromProto,
  poolingCardToProto,
  poolingStatsFromProto,
  poolingStatsToProto,
} from './pooling-mapping.js';
import {
  kvParamsFromProto,
  kvParamsToProto,
  kvTransferFromProto,
  kvTransferToProto,
} from './kv-transfer-mapping.js';
import {
  chatDeltaFromProto,
  chatDeltaToProto,
  chatResultFromProto,
  chatResultToProto,
  chatToolsFromProto,
  chatToolsToProto,
} from './tool-mapping.js';

const CHAT_ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);

// ---------------------------------------------------------------------------------------
// Requests: engine → proto (client side) and proto → engine (server side)
// ---------------------------------------------------------------------------------------

function chatMessageToProto(m: ChatMessage): pb.ChatMessage {
  return pb.ChatMessage.fromPartial({
    role: m.role,
    content: m.content,
    toolCalls: (m.toolCalls ?? []).map((c) => ({ id: c.id, type: c.type, function: { ...c.function } })),
    toolCallId: m.toolCallId,
    name: m.name,
    reasoningContent: m.reasoningContent,
    parts: partsToProto(m.parts),
  });
}

function partsToProto(parts: readonly ContentPart[] | undefined): pb.ContentPart[] {
  return (parts ?? []).map((p) => ({
    part: p.type === 'text' ? { $case: 'text', text: p.text } : { $case: 'image', image: p.image },
  }));
}

/** Parts as the engine's (undefined when none: a prompt without images); the engine checks the indices. */
function partsFromProto(parts: readonly pb.ContentPart[], at: string): ContentPart[] | undefined {
  if (parts.length === 0) return undefined;
  return parts.map((p, j) => {
    switch (p.part?.$case) {
      case 'text':
        return { type: 'text', text: p.part.text };
      case 'image':
        return { type: 'image', image: p.part.image };
      default:
        throw invalidArgument(`${at}[${j}]`, 'one of text or image is required');
    }
  });
}

function imagesToProto(images: readonly ImageInput[] | undefined): pb.Image[] {
  return (images ?? []).map((i) => ({
    width: i.width,
    height: i.height,
    rgb: Buffer.from(i.rgb.buffer, i.rgb.byteOffset, i.rgb.byteLength),
    field: i.field,
  }));
}

function imagesFromProto(images: readonly pb.Image[]): ImageInput[] | undefined {
  if (images.length === 0) return undefined;
  return images.map((i) => ({ width: i.width, height: i.height, rgb: i.rgb, field: i.field }));
}

export function chatMessagesToProto(messages: readonly ChatMessage[]): pb.ChatMessage[] {
  return messages.map(chatMessageToProto);
}

export function chatMessagesFromProto(messages: readonly pb.ChatMessage[], field: string): ChatMessage[] {
  return messages.map((m, i) => {
    const at = `${field}[${i}]`;
    if (!CHAT_ROLES.has(m.role)) {
      throw invalidArgument(`${at}.role`, `must be one of system, user, assistant, tool; got '${m.role}'`);
    }
    const toolCalls = m.toolCalls.map((c, j) => {
      if (c.type !== 'function')
        throw invalidArgument(`${at}.tool_calls[${j}].type`, `must be 'function', got '${c.type}'`);
      if (!c.function) throw invalidArgument(`${at}.tool_calls[${j}].function`, 'is required');
      return {
        id: c.id,
        type: 'function' as const,
        function: { name: c.function.name, arguments: c.function.arguments },
      };
    });
    return {
      role: m.role as ChatMessage['role'],
      content: m.content,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...(m.toolCallId !== undefined ? { toolCallId: m.toolCallId } : {}),
      ...(m.name !== undefined ? { name: m.name } : {}),
      ...(m.reasoningContent !== undefined ? { reasoningContent: m.reasoningContent } : {}),
      ...optionalParts(partsFromProto(m.parts, `${at}.parts`)),
    };
  });
}

function optionalParts(parts: ContentPart[] | undefined): { parts?: ContentPart[] } {
  return parts ? { parts } : {};
}

/** Drops keys whose value is undefined, so "absent" stays absent on the engine side. */
function defined<T extends object>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as T;
}

const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;

/**
 * An integer outside the wire type's range would make the whole request fail to encode (a
 * generation error, naming no field). Each of these fields is a bound or a count the engine
 * checks itself, so a saturated value means the same (a cap far beyond any model) or is refused
 * there naming the field (n, best_of, top_logprobs, seed above their maximum).
 */
function saturate(v: number | undefined, lo: number, hi: number): number | undefined {
  if (v === undefined || !Number.isInteger(v)) return v;
  return Math.min(hi, Math.max(lo, v));
}

function paramsToProto(params: SamplingParams): pb.SamplingParams {
  const i32 = (v: number | undefined): number | undefined => saturate(v, -INT32_MAX - 1, INT32_MAX);
  // The per-request draft cap is set only by in-process callers of the engine (bench:spec);
  // no gateway accepts it, and the gRPC API does not carry it.
  const { numSpeculativeTokens: _engineLocal, ...p } = params;
  return pb.SamplingParams.fromPartial({
    ...p,
    maxNewTokens: i32(p.maxNewTokens),
    topK: i32(p.topK),
    topLogprobs: i32(p.topLogprobs),
    n: i32(p.n),
    bestOf: i32(p.bestOf),
    truncate: i32(p.truncate),
    // 2^53 is past MAX_SEED, so the engine refuses it as out of range (negative seeds are
    // refused by the gateways; they are left as they are, never silently changed).
    seed: saturate(p.seed, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1),
    stop: p.stop ? [...p.stop] : [],
    stopTokenIds: p.stopTokenIds ? p.stopTokenIds.map((id) => saturate(id, 0, UINT32_MAX)!) : [],
    minTokens: i32(p.minTokens),
    priority: i32(p.priority),
    promptLogprobs: i32(p.promptLogprobs),
    earlyStopping: p.earlyStopping === undefined ? undefined : String(p.earlyStopping),
    logitBias: logitBiasToProto(p.logitBias),
    badWords: p.badWords ? [...p.badWords] : [],
  });
}

/**
 * logit_bias travels as a map keyed by uint32: a key that is not one would be encoded as
 * another token, so it is refused here, naming it (the engine checks the ids against the vocabulary).
 */
function logitBiasToProto(bias: SamplingParams['logitBias']): Record<number, number> {
  if (bias === undefined || bias === null) return {};
  const out: Record<number, number> = {};
  for (const [key, value] of Object.entries(bias)) {
    const id = Number(key);
    if (!/^\d+$/.test(key) || id > UINT32_MAX)
      throw invalidArgument(`params.logit_bias.${key}`, 'must be keyed by a token id (an integer >= 0)');
    out[id] = value;
  }
  return out;
}

/**
 * early_stopping travels as text ("true", "false", "never"); any other text is passed on as it
 * is, for the engine to refuse naming the field.
 */
function earlyStoppingFromProto(v: string | undefined): SamplingParams['earlyStopping'] {
  if (v === 'true') return true;
  if (v === 'false') return false;
  return v as SamplingParams['earlyStopping'];
}

function paramsFromProto(p: pb.SamplingParams | undefined): SamplingParams {
  if (!p) return {};
  const { stop, stopTokenIds, earlyStopping, logitBias, badWords, ...scalars } = p;
  return defined({
    ...scalars,
    stop: stop.length > 0 ? stop : undefined,
    stopTokenIds: stopTokenIds.length > 0 ? stopTokenIds : undefined,
    logitBias: Object.keys(logitBias).length > 0 ? logitBias : undefined,
    badWords: badWords.length > 0 ? badWords : undefined,
    earlyStopping: earlyStoppingFromProto(earlyStopping),
  });
}

export function generateRequestToProto(r: GenerateRequest): pb.GenerateRequest {
  const prompt = r.prompt;
  let promptPb: pb.GenerateRequest['prompt'];
  switch (prompt.kind) {
    case 'text':
      promptPb = {
        $case: 'text',
        text: {
          text: prompt.text,
          addSpecialTokens: prompt.addSpecialTokens,
          parts: partsToProto(prompt.parts),
        },
      };
      break;
    case 'tokens':
      promptPb = { $case: 'tokens', tokens: { ids: [...prompt.ids] } };
      break;
    case 'chat':
      promptPb = {
        $case: 'chat',
        chat: {
          messages: chatMessagesToProto(prompt.messages),
          addGenerationPrompt: prompt.addGenerationPrompt,
          ...chatToolsToProto(prompt),
        },
      };
      break;
  }
  return pb.GenerateRequest.fromPartial({
    requestId: r.requestId ?? '',
    prompt: promptPb,
    params: paramsToProto(r.params),
    adapter: r.adapter ?? '',
    ...(r.constraint ? { constraint: constraintToProto(r.constraint) } : {}),
    ...(r.kvTransfer ? { kvTransfer: kvTransferToProto(r.kvTransfer) } : {}),
    images: imagesToProto(r.images),
  });
}

function constraintToProto(c: Constraint): pb.Constraint {
  const strict = c.kind === 'json_schema' && c.strict === true;
  return { kind: constraintKindToProto(c), jsonSchemaStrict: strict };
}

function constraintKindToProto(c: Constraint): pb.Constraint['kind'] {
  switch (c.kind) {
    case 'json_object':
      return { $case: 'jsonObject', jsonObject: {} };
    case 'json_schema':
      return { $case: 'jsonSchema', jsonSchema: c.schema };
    case 'regex':
      return { $case: 'regex', regex: c.pattern };
    case 'choice':
      return { $case: 'choice', choice: { choices: [...c.choices] } };
    case 'grammar':
      return { $case: 'grammar', grammar: c.ebnf };
  }
}

/** The engine validates the constraint's content; here only the oneof is read. */
function constraintFromProto(c: pb.Constraint | undefined): Constraint | undefined {
  switch (c?.kind?.$case) {
    case undefined:
      return undefined;
    case 'jsonObject':
      return { kind: 'json_object' };
    case 'jsonSchema':
      return {
        kind: 'json_schema',
        schema: c.kind.jsonSchema,
        ...(c.jsonSchemaStrict ? { strict: true } : {}),
      };
    case 'regex':
      return { kind: 'regex', pattern: c.kind.regex };
    case 'choice':
      return { kind: 'choice', choices: c.kind.choice.choices };
    case 'grammar':
      return { kind: 'grammar', ebnf: c.kind.grammar };
  }
}

export function generateRequestFromProto(r: pb.GenerateRequest): GenerateRequest {
  let prompt: PromptInput;
  switch (r.prompt?.$case) {
    case 'text':
      prompt = defined({
        kind: 'text',
        text: r.prompt.text.text,
        addSpecialTokens: r.prompt.text.addSpecialTokens,
        parts: partsFromProto(r.prompt.text.parts, 'prompt.text.parts'),
      });
      break;
    case 'tokens':
      prompt = { kind: 'tokens', ids: r.prompt.tokens.ids };
      break;
    case 'chat':
      prompt = defined({
        kind: 'chat',
        messages: chatMessagesFromProto(r.prompt.chat.messages, 'prompt.chat.messages'),
        addGenerationPrompt: r.prompt.chat.addGenerationPrompt,
        ...chatToolsFromProto(r.prompt.chat),
      });
      break;
    default:
      throw invalidArgument('prompt', 'one of text, tokens or chat is required');
  }
  const constraint = constraintFromProto(r.constraint);
  const kvTransfer = kvTransferFromProto(r.kvTransfer);
  const images = imagesFromProto(r.images);
  return {
    ...(r.requestId !== '' ? { requestId: r.requestId } : {}),
    prompt,
    params: paramsFromProto(r.params),
    ...(r.adapter !== '' ? { adapter: r.adapter } : {}),
    ...(constraint ? { constraint } : {}),
    ...(kvTransfer ? { kvTransfer } : {}),
    ...(images ? { images } : {}),
  };
}

// ---------------------------------------------------------------------------------------
// Events: engine → proto (server side) and proto → engine (client side)
// ---------------------------------------------------------------------------------------

const FINISH_TO_PROTO: Record<FinishReason, pb.FinishReason> = {
  stop: pb.FinishReason.FINISH_REASON_STOP,
  length: pb.FinishReason.FINISH_REASON_LENGTH,
  cancelled: pb.FinishReason.FINISH_REASON_CANCELLED,
  error: pb.FinishReason.FINISH_REASON_ERROR,
  tool_calls: pb.FinishReason.FINISH_REASON_TOOL_CALLS,
};

function finishReasonFromProto(r: pb.FinishReason): FinishReason {
  switch (r) {
    case pb.FinishReason.FINISH_REASON_STOP:
      return 'stop';
    case pb.FinishReason.FINISH_REASON_LENGTH:
      return 'length';
    case pb.FinishReason.FINISH_REASON_CANCELLED:
      return 'cancelled';
    case pb.FinishReason.FINISH_REASON_TOOL_CALLS:
      return 'tool_calls';
    default:
      // An unknown reason from a newer server is reported as an error, never guessed.
      return 'error';
  }
}

function logprobToProto(l: TokenLogprob): pb.TokenLogprob {
  return { tokenId: l.tokenId, text: l.text, logprob: l.logprob, top: l.top.map((t) => ({ ...t })) };
}

function logprobFromProto(l: pb.TokenLogprob): TokenLogprob {
  return { tokenId: l.tokenId, text: l.text, logprob: l.logprob, top: l.top };
}

export function tokenEventToProto(e: TokenEvent): pb.TokenEvent {
  return {
    requestId: e.requestId,
    index: e.index,
    tokenIds: [...e.tokenIds],
    text: e.text,
    logprobs: (e.logprobs ?? []).map(logprobToProto),
    chat: e.chat ? chatDeltaToProto(e.chat) : undefined,
  };
}

export function finishEventToProto(e: FinishEvent): pb.FinishEvent {
  return {
    requestId: e.requestId,
    index: e.index,
    reason: FINISH_TO_PROTO[e.reason],
    text: e.text,
    tokenIds: [...e.tokenIds],
    cumulativeLogprob: e.cumulativeLogprob,
    usage: { ...e.usage },
    timings: { ...e.timings },
    seed: e.seed,
    error: e.error,
    chat: e.chat ? chatResultToProto(e.chat) : undefined,
    decodeTimesMs: [...(e.decodeTimesMs ?? [])],
    kvTransfer: e.kvTransfer ? kvParamsToProto(e.kvTransfer) : undefined,
    promptLogprobs: (e.promptLogprobs ?? []).map((l) => ({
      tokenId: l.tokenId,
      text: l.text,
      logprob: l.logprob ?? undefined,
      rank: l.rank ?? undefined,
      top: l.top.map((t) => ({ ...t })),
    })),
  };
}

export function eventToProto(e: GenerateEvent): pb.GenerateStreamResponse {
  return e.type === 'token'
    ? { event: { $case: 'token', token: tokenEventToProto(e) } }
    : { event: { $case: 'finish', finish: finishEventToProto(e) } };
}

export function tokenEventFromProto(e: pb.TokenEvent): TokenEvent {
  return {
    type: 'token',
    requestId: e.requestId,
    index: e.index,
    tokenIds: e.tokenIds,
    text: e.text,
    ...(e.logprobs.length > 0 ? { logprobs: e.logprobs.map(logprobFromProto) } : {}),
    ...(e.chat ? { chat: chatDeltaFromProto(e.chat) } : {}),
  };
}

export function finishEventFromProto(e: pb.FinishEvent): FinishEvent {
  return {
    type: 'finish',
    requestId: e.requestId,
    index: e.index,
    reason: finishReasonFromProto(e.reason),
    text: e.text,
    tokenIds: e.tokenIds,
    cumulativeLogprob: e.cumulativeLogprob,
    usage: e.usage ?? { promptTokens: 0, completionTokens: 0, cachedPromptTokens: 0 },
    timings: e.timings ?? { queueMs: 0, prefillMs: 0, decodeMs: 0, ttftMs: 0 },
    seed: e.seed,
    ...(e.error !== undefined ? { error: e.error } : {}),
    ...(e.chat ? { chat: chatResultFromProto(e.chat) } : {}),
    ...(e.decodeTimesMs.length > 0 ? { decodeTimesMs: e.decodeTimesMs } : {}),
    ...(e.kvTransfer ? { kvTransfer: kvParamsFromProto(e.kvTransfer)! } : {}),
    ...(e.promptLogprobs.length > 0
      ? {
          promptLogprobs: e.promptLogprobs.map((l) => ({
            tokenId: l.tokenId,
            text: l.text,
            logprob: l.logprob ?? null,
            rank: l.rank ?? null,
            top: l.top,
          })),
        }
      : {}),
  };
}

/** Undefined for an empty message (a newer server's event kind this client does not know). */
export function eventFromProto(m: pb.GenerateStreamResponse): GenerateEvent | undefined {
  switch (m.event?.$case) {
    case 'token':
      return tokenEventFromProto(m.event.token);
    case 'finish':
      return finishEventFromProto(m.event.finish);
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// Status and info
// ---------------------------------------------------------------------------------------

function histogramToProto(h: HistogramSnapshot): pb.Histogram {
  return { bounds: [...h.bounds], counts: [...h.counts], sum: h.sum, count: h.count };
}

function histogramFromProto(h: pb.Histogram | undefined): HistogramSnapshot {
  return h ?? { bounds: [], counts: [], sum: 0, count: 0 };
}

export function statusToProto(s: EngineStatus): pb.StatusResponse {
  // fromPartial: a field the engine leaves out becomes its zero value instead of failing to encode.
  const { specDecode, pooling, ...rest } = s;
  return pb.StatusResponse.fromPartial({
    ...rest,
    ...(pooling ? { pooling: poolingStatsToProto(pooling) } : {}),
    ttft: histogramToProto(s.ttft),
    interTokenLatency: histogramToProto(s.interTokenLatency),
    e2eLatency: histogramToProto(s.e2eLatency),
    promptTokensPerRequest: histogramToProto(s.promptTokensPerRequest),
    generationTokensPerRequest: histogramToProto(s.generationTokensPerRequest),
    runningLoraAdapters: [...s.runningLoraAdapters],
    waitingLoraAdapters: [...s.waitingLoraAdapters],
    ...(specDecode
      ? { specDecode: { ...specDecode, acceptedPerPosition: [...specDecode.acceptedPerPosition] } }
      : {}),
  });
}

function roleFromProto(role: string): EngineRole {
  return ENGINE_ROLES.find((r) => r === role) ?? 'mixed';
}

export function statusFromProto(s: pb.StatusResponse): EngineStatus {
  const { specDecode, pooling, ...rest } = s;
  return {
    ...rest,
    ...(specDecode ? { specDecode } : {}),
    ...(pooling ? { pooling: poolingStatsFromProto(pooling) } : {}),
    role: roleFromProto(s.role),
    roleStatus: s.roleStatus === 'RoleSwitching' ? 'RoleSwitching' : 'RoleReady',
    ttft: histogramFromProto(s.ttft),
    interTokenLatency: histogramFromProto(s.interTokenLatency),
    e2eLatency: histogramFromProto(s.e2eLatency),
    promptTokensPerRequest: histogramFromProto(s.promptTokensPerRequest),
    generationTokensPerRequest: histogramFromProto(s.generationTokensPerRequest),
  };
}

export function infoToProto(i: EngineInfo): pb.InfoResponse {
  const { pooling, ...rest } = i;
  return pb.InfoResponse.fromPartial({
    ...rest,
    ...(pooling ? { pooling: poolingCardToProto(pooling) } : {}),
  });
}

export function infoFromProto(i: pb.InfoResponse): EngineInfo {
  const { pooling, ...rest } = i;
  return { ...rest, ...(pooling ? { pooling: poolingCardFromProto(pooling) } : {}) };
}
