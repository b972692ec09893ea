/**
 * A decoder as a pooling backend: Qwen3-Embedding's last-token pooling (the final norm's
 * output at each input's last token, native hiddenStep) and Qwen3-Reranker's yes/no scoring
 * (the last token's logits of "no" and "yes"). Each pass prefills its inputs from position 0
 * into pages of the context's own small pool that nothing keeps past the pass: no decode, no
 * KV survives the request.
 */
import {
  createContext,
  disposeContext,
  disposeModel,
  hiddenStep,
  loadModel,
  modelInfo,
  step,
  type ContextHandle,
  type ModelInfo,
  type PoolingSpecInfo,
  type StepPlan,
} from '../../native/native.js';
import { EngineError } from '../errors.js';
import type { PoolingBackend } from './backend.js';
import { poolingCard, type PoolingCardOptions } from './card.js';
import { greedySampling } from '../step-plan.js';
import type { PassInput } from './pass-queue.js';

/** Tokens per KV block of the pass pool: small, since a block's unused tail is wasted per input. */
const BLOCK = 16;

export interface DecoderBackendOptions extends PoolingCardOptions {
  readonly maxPassTokens: number;
  readonly maxPassInputs: number;
  readonly threads: number;
  readonly pooling: PoolingSpecInfo;
  /** Qwen3-Reranker: the [no, yes] token ids whose logits score a pair; absent: an embedder. */
  readonly rerankTokens?: readonly [number, number];
}

/** The plan of one prefill-only pass: inputs side by side, pages handed out in order. */
function passPlan(
  inputs: readonly PassInput[],
  pagesPerBlock: number,
  returnLogits: 'none' | 'last',
): StepPlan {
  const S = inputs.length;
  const seqTokenOffsets = new Int32Array(S + 1);
  const blockTableOffsets = new Int32Array(S + 1);
  inputs.forEach((x, i) => {
    seqTokenOffsets[i + 1] = seqTokenOffsets[i]! + x.ids.length;
    blockTableOffsets[i + 1] = blockTableOffsets[i]! + Math.ceil(x.ids.length / BLOCK) * pagesPerBlock;
  });
  const tokens = new Int32Array(seqTokenOffsets[S]!);
  const positions = new Int32Array(tokens.length);
  inputs.forEach((x, i) => {
    tokens.set(x.ids, seqTokenOffsets[i]!);
    for (let p = 0; p < x.ids.length; p++) positions[seqTokenOffsets[i]! + p] = p;
  });
  return {
    tokens,
    positions,
    seqTokenOffsets,
    blockTableOffsets,
    blockTables: Int32Array.from({ length: blockTableOffsets[S]! }, (_, k) => k),
    // Nothing is sampled: the neutral sampling fields, every sequence's sample flag 0.
    ...greedySampling(S),
    sample: new Uint8Array(S),
    returnLogits,
  };
}

export async function loadDecoderBackend(path: string, o: DecoderBackendOptions): Promise<PoolingBackend> {
  const rerank = o.rerankTokens !== undefined;
  if (!rerank && (o.pooling.modes.length !== 1 || o.pooling.modes[0] !== 'lasttoken'))
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${path}: a decoder embeds by last-token pooling only; its files ask for ${o.pooling.modes.join('+') || 'none'}`,
      'model',
    );
  const model = await loadModel(path);
  let m: ModelInfo;
  let ctx: ContextHandle;
  const card = (info: ModelInfo) =>
    poolingCard(
      {
        hiddenSize: info.hiddenSize,
        pooledDim: rerank ? 0 : info.hiddenSize,
        pooling: o.pooling,
        labels: [],
        maxTokens: info.contextLength,
        modelPath: path,
        decoder: true,
        rerank,
      },
      o,
    );
  try {
    m = modelInfo(model);
    const maxTokens = Math.max(o.maxPassTokens, card(m).maxInputTokens);
    const pages = (Math.ceil(maxTokens / BLOCK) + o.maxPassInputs) * m.kvLayout.pagesPerBlock;
    ctx = createContext(model, {
      kvBlocks: pages,
      blockSize: BLOCK,
      maxBatchTokens: maxTokens,
      maxSeqs: o.maxPassInputs,
      threads: o.threads,
    });
  } catch (e) {
    disposeModel(model);
    throw e;
  }
  const D = m.hiddenSize;
  const V = m.vocabSize;
  const maxTokens = Math.max(o.maxPassTokens, card(m).maxInputTokens);
  return {
    card: card(m),
    vocabSize: m.vocabSize,
    architecture: m.architecture,
    dtype: Object.entries(m.tensorTypes).sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown',
    contextLength: m.contextLength,
    tokenTypes: 0,
    passBudget: { maxTokens, maxInputs: o.maxPassInputs },
    async run(inputs: readonly PassInput[]): Promise<Float32Array[]> {
      if (!rerank) {
        const hidden = await hiddenStep(ctx, passPlan(inputs, m.kvLayout.pagesPerBlock, 'none'));
        return inputs.map((_, i) => hidden.slice(i * D, (i + 1) * D));
      }
      const r = await step(ctx, passPlan(inputs, m.kvLayout.pagesPerBlock, 'last'));
      const [no, yes] = o.rerankTokens!;
      return inputs.map((_, i) => Float32Array.of(r.logits![i * V + no]!, r.logits![i * V + yes]!));
    },
    dispose(): void {
      disposeContext(ctx);
      disposeModel(model);
    },
  };
}
