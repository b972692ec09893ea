/**
 * Builds the proposer the options name, for a loaded model (engine/load-engine.ts calls it):
 * the n-gram lookup needs nothing. The draft-model and layer-skip proposers are not built
 * yet and are refused here with an error naming the field, as is `mtp` unless the model has
 * multi-token-prediction heads (no architecture Prism loads has them).
 */
import { EngineError } from '../errors.js';
import { NgramProposer } from './ngram.js';
import type { ResolvedSpeculativeOptions } from './options.js';
import type { Proposer } from './proposer.js';
import type { SpeculatorOptions } from './speculator.js';

export interface ServedModel {
  readonly name: string;
  readonly architecture: string;
}

export function startSpeculation(
  o: ResolvedSpeculativeOptions,
  model: ServedModel,
): { proposer: Proposer; options: SpeculatorOptions } {
  const options: SpeculatorOptions = { numSpeculativeTokens: o.numSpeculativeTokens, fixedK: !o.adaptive };
  switch (o.method) {
    case 'ngram':
      return { proposer: new NgramProposer({ maxN: o.ngramMax, minN: o.ngramMin }), options };
    case 'mtp':
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${o.field}: plugin 'mtp' needs a model with multi-token-prediction heads, and ${model.name} ` +
          `(${model.architecture}) has none; use 'memory_decoding' (n-gram lookup) instead, or ` +
          `prism serve --speculative ngram|draft|layer-skip`,
        o.field,
      );
    default:
      throw new EngineError(
        'INVALID_ARGUMENT',
        `${o.field}: speculative method '${o.method}' is not built in this engine`,
        o.field,
      );
  }
}
