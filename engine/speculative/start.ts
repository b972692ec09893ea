/**
 * Builds the proposer the options name, for a loaded model (engine/load-engine.ts calls it):
 * the n-gram lookup needs nothing; layer-skip drafts on the served model's own context with
 * a few scratch KV pages reserved beside the pool (`scratchPagesFor`); a draft model is
 * loaded with its own context (load-draft.ts). `mtp` is refused with an error naming the
 * field unless the model has multi-token-prediction heads (no architecture Prism loads has them).
 */
import type { ContextHandle, ModelInfo } from '../../native/native.js';
import { EngineError } from '../errors.js';
import { LayerSkipProposer } from './layer-skip.js';
import { loadDraftModel } from './load-draft.js';
import { NgramProposer } from './ngram.js';
import type { ResolvedSpeculativeOptions } from './options.js';
import type { Proposer } from './proposer.js';
import type { SpeculatorOptions } from './speculator.js';

export interface ServedModel {
  readonly name: string;
  readonly architecture: string;
}

/** The served model's native side, for proposers that run it (layer-skip). */
export interface ServedContext {
  readonly ctx: ContextHandle;
  readonly model: ModelInfo;
  readonly device: string;
  readonly blockSize: number;
  readonly maxSeqs: number;
  readonly maxBatchTokens: number;
  readonly threads: number;
  /** Blocks in the pool the block manager uses. */
  readonly poolBlocks: number;
  /** The served model's tokenizer (a draft model must share its vocabulary). */
  readonly tokenizer: { readonly vocabSize: number; tokenText(id: number): string };
  /** The scratch pages `scratchPagesFor` asked for: ids first .. first + count - 1. */
  readonly scratch: { readonly first: number; readonly count: number };
}

/**
 * Layer-skip's default exit layer: three quarters of the layers. Measured on the default
 * model (docs/speculative.md, "Layer skipping"): acceptance per unit of draft cost grows with
 * depth (1% of draft tokens at 4 of 30 layers, 9% at 22, 26% at 29), so a shallow exit never
 * pays; past three quarters a draft step costs nearly a full one.
 */
function defaultExitLayer(layers: number): number {
  return Math.max(1, Math.round((layers * 3) / 4));
}

/** Sequences whose drafts may run past their own blocks in one draft step (one scratch block each). */
const SCRATCH_SEQS = 4;

/** Extra KV pages the proposer needs beside the pool (0 for all but layer-skip). */
export function scratchPagesFor(o: ResolvedSpeculativeOptions | undefined, model: ModelInfo): number {
  return o?.method === 'layer-skip' ? SCRATCH_SEQS * model.kvLayout.pagesPerBlock : 0;
}

/**
 * A draft step's cost against a full step, by the weights each reads: `layers` of the
 * model's decoder layers plus the output head (a decode step is bound by reading weights).
 */
function draftStepCost(m: ModelInfo, layers: number): number {
  const attn = m.hiddenSize * m.headDim * (2 * m.numHeads + 2 * m.numKvHeads);
  const mlp = 3 * m.hiddenSize * m.intermediateSize * Math.max(1, m.expertsUsed);
  const head = m.vocabSize * m.hiddenSize;
  return (layers * (attn + mlp) + head) / (m.numLayers * (attn + mlp) + head);
}

export async function startSpeculation(
  o: ResolvedSpeculativeOptions,
  model: ServedModel,
  served?: ServedContext,
): Promise<{ proposer: Proposer; options: SpeculatorOptions }> {
  const options: SpeculatorOptions = { numSpeculativeTokens: o.numSpeculativeTokens, fixedK: !o.adaptive };
  switch (o.method) {
    case 'ngram':
      // The CUDA step does not verify draft tokens yet (native/cuda/host: it refuses them).
      if (served && served.device !== 'cpu')
        throw new EngineError(
          'INVALID_ARGUMENT',
          `${o.field}: speculative decoding is not supported on device ${served.device} yet (its step does not verify draft tokens)`,
          o.field,
        );
      return { proposer: new NgramProposer({ maxN: o.ngramMax, minN: o.ngramMin }), options };
    case 'layer-skip': {
      if (!served) throw new Error('layer-skip needs the served model context');
      const m = served.model;
      const field = o.field.startsWith('--') ? '--draft-layers' : `${o.field}.draftLayers`;
      if (served.device !== 'cpu')
        throw new EngineError(
          'INVALID_ARGUMENT',
          `${o.field}: layer-skip is not supported on device ${served.device} (its step has no early exit yet)`,
          o.field,
        );
      const exitLayer = o.draftLayers ?? defaultExitLayer(m.numLayers);
      // All layers is allowed: the draft is then the model itself (every draft accepted; tests).
      if (exitLayer > m.numLayers)
        throw new EngineError(
          'INVALID_ARGUMENT',
          `${field}: must be at most the model's ${m.numLayers} layers, got ${exitLayer}`,
          field,
        );
      const scratchPages = Array.from({ length: served.scratch.count }, (_, i) => served.scratch.first + i);
      return {
        proposer: new LayerSkipProposer(served.ctx, {
          exitLayer,
          blockSize: served.blockSize,
          pagesPerBlock: m.kvLayout.pagesPerBlock,
          scratchPages,
          maxSeqs: served.maxSeqs,
          maxBatchTokens: served.maxBatchTokens,
          draftStepCost: draftStepCost(m, exitLayer),
        }),
        options,
      };
    }
    case 'draft': {
      if (!served || o.draftModel === undefined) throw new Error('draft needs the served model context');
      const field = o.field.startsWith('--') ? '--draft-model' : `${o.field}.draftModel`;
      const proposer = await loadDraftModel(o.draftModel, field, {
        model: served.model,
        tokenizer: served.tokenizer,
        device: served.device,
        blockSize: served.blockSize,
        poolBlocks: served.poolBlocks,
        maxSeqs: served.maxSeqs,
        maxBatchTokens: served.maxBatchTokens,
        threads: served.threads,
      });
      return { proposer, options };
    }
    case 'mtp':
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${o.field}: plugin 'mtp' needs a model with multi-token-prediction heads, and ${model.name} ` +
          `(${model.architecture}) has none; use 'memory_decoding' (n-gram lookup) instead, or ` +
          `prism serve --speculative ngram|draft|layer-skip`,
        o.field,
      );
  }
}
