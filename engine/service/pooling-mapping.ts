/**
 * The pooling messages of the engine API (Embed, and the pooling parts of Info and Status)
 * to and from engine/pooling/types.ts. Vectors cross as little-endian float32 bytes, not as
 * repeated floats: a batch of embeddings is most of the answer.
 */
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import type {
  PoolingCard,
  PoolingInput,
  PoolingRequest,
  PoolingResult,
  PoolingStats,
  PoolingTask,
} from '../pooling/types.js';

const TASKS: readonly PoolingTask[] = ['embed', 'tokens', 'score', 'classify'];

function inputToProto(x: PoolingInput): pb.PoolingInput {
  if ('text' in x) return { input: { $case: 'text', text: x.text } };
  if ('ids' in x) return { input: { $case: 'ids', ids: { ids: [...x.ids] } } };
  return { input: { $case: 'pair', pair: { first: x.pair[0], second: x.pair[1] } } };
}

function inputFromProto(x: pb.PoolingInput): PoolingInput {
  switch (x.input?.$case) {
    case 'text':
      return { text: x.input.text };
    case 'ids':
      return { ids: x.input.ids.ids };
    case 'pair':
      return { pair: [x.input.pair.first, x.input.pair.second] };
    default:
      // An empty input: the engine's validation names it.
      return {} as PoolingInput;
  }
}

export function poolingRequestToProto(r: PoolingRequest): pb.EmbedRequest {
  return {
    requestId: r.requestId ?? '',
    task: r.task,
    inputs: r.inputs.map(inputToProto),
    inputField: r.inputField ?? '',
    truncateDirection: r.truncate?.direction ?? '',
    truncateMaxTokens: r.truncate?.maxTokens ?? 0,
    ...(r.normalize !== undefined ? { normalize: r.normalize } : {}),
    ...(r.dimensions !== undefined ? { dimensions: r.dimensions } : {}),
    ...(r.addSpecialTokens !== undefined ? { addSpecialTokens: r.addSpecialTokens } : {}),
    ...(r.activation !== undefined ? { activation: r.activation } : {}),
    ...(r.priority !== undefined ? { priority: r.priority } : {}),
  };
}

export function poolingRequestFromProto(r: pb.EmbedRequest): PoolingRequest {
  const task = TASKS.find((t) => t === r.task) ?? (r.task as PoolingTask);
  const direction = r.truncateDirection;
  return {
    ...(r.requestId ? { requestId: r.requestId } : {}),
    task,
    inputs: r.inputs.map(inputFromProto),
    ...(r.inputField ? { inputField: r.inputField } : {}),
    ...(direction
      ? {
          truncate: {
            direction: direction as 'left' | 'right',
            ...(r.truncateMaxTokens > 0 ? { maxTokens: r.truncateMaxTokens } : {}),
          },
        }
      : {}),
    ...(r.normalize !== undefined ? { normalize: r.normalize } : {}),
    ...(r.dimensions !== undefined ? { dimensions: r.dimensions } : {}),
    ...(r.addSpecialTokens !== undefined ? { addSpecialTokens: r.addSpecialTokens } : {}),
    ...(r.activation !== undefined ? { activation: r.activation } : {}),
    ...(r.priority !== undefined ? { priority: r.priority } : {}),
  };
}

const floatBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

function floatsFromBytes(b: Uint8Array): Float32Array {
  // A copy: the message's buffer need not be 4-byte aligned.
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b.subarray(0, out.byteLength));
  return out;
}

export function poolingResultToProto(r: PoolingResult): pb.EmbedResponse {
  return {
    outputs: r.outputs.map((v, i) => ({ values: floatBytes(v), tokens: r.tokenCounts[i] ?? 0 })),
    promptTokens: r.promptTokens,
    labels: [...(r.labels ?? [])],
  };
}

export function poolingResultFromProto(r: pb.EmbedResponse): PoolingResult {
  return {
    outputs: r.outputs.map((o) => floatsFromBytes(o.values)),
    tokenCounts: r.outputs.map((o) => o.tokens),
    promptTokens: r.promptTokens,
    ...(r.labels.length > 0 ? { labels: r.labels } : {}),
  };
}

export function poolingCardToProto(c: PoolingCard): pb.PoolingCard {
  return { ...c, tasks: [...c.tasks], matryoshka: [...c.matryoshka], labels: [...c.labels] };
}

export function poolingCardFromProto(c: pb.PoolingCard): PoolingCard {
  return { ...c, tasks: c.tasks.filter((t): t is PoolingTask => TASKS.includes(t as PoolingTask)) };
}

export function poolingStatsToProto(s: PoolingStats): pb.PoolingStats {
  return { ...s, latency: { ...s.latency, bounds: [...s.latency.bounds], counts: [...s.latency.counts] } };
}

export function poolingStatsFromProto(s: pb.PoolingStats): PoolingStats {
  return { ...s, latency: s.latency ?? { bounds: [], counts: [], sum: 0, count: 0 } };
}
