/**
 * A pooling model's card: which tasks it serves, its vector width and pooling, whether its
 * embeddings are normalised, which Matryoshka widths it accepts, its longest input. Built once
 * at load from what the native loader read and the engine options.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PoolingSpecInfo } from '../../native/native.js';
import { EngineError } from '../errors.js';
import type { PoolingCard, PoolingTask } from './types.js';

export interface PoolingCardOptions {
  /** Matryoshka widths to accept (`dimensions`); 'any': every width up to the model's; default: the model's config. */
  readonly matryoshkaDimensions?: readonly number[] | 'any';
  /** Longest input to accept, below the model's own limit. */
  readonly maxInputTokens?: number;
}

export interface PoolingFacts {
  readonly hiddenSize: number;
  readonly pooledDim: number;
  readonly pooling: PoolingSpecInfo;
  readonly labels: readonly string[];
  /** Longest input the positions allow. */
  readonly maxTokens: number;
  readonly modelPath: string;
  readonly decoder: boolean;
  /** A decoder reranker (yes/no logits): one score per pair. */
  readonly rerank?: boolean;
}

/** config.json's `matryoshka_dimensions` (a list) or `is_matryoshka: true` (any width), as vLLM reads them. */
function configMatryoshka(modelPath: string): number[] {
  const file = join(modelPath, 'config.json');
  if (!existsSync(file)) return [];
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as {
      matryoshka_dimensions?: unknown;
      is_matryoshka?: unknown;
    };
    if (
      Array.isArray(c.matryoshka_dimensions) &&
      c.matryoshka_dimensions.every((d) => Number.isInteger(d) && (d as number) > 0)
    )
      return [...(c.matryoshka_dimensions as number[])].sort((a, b) => a - b);
    return c.is_matryoshka === true ? [0] : [];
  } catch {
    return []; // the native loader has read the same file and said what is wrong with it
  }
}

export function poolingCard(f: PoolingFacts, o: PoolingCardOptions): PoolingCard {
  const tasks: PoolingTask[] = [];
  if (f.rerank) tasks.push('score');
  else if (f.labels.length > 0)
    tasks.push(...(f.labels.length === 1 ? (['score', 'classify'] as const) : (['classify'] as const)));
  else {
    if (f.pooledDim > 0) tasks.push('embed', 'score');
    if (!f.decoder) tasks.push('tokens');
  }
  const limits = [f.maxTokens];
  if (f.pooling.maxSeqLength > 0) limits.push(f.pooling.maxSeqLength);
  if (o.maxInputTokens !== undefined) limits.push(o.maxInputTokens);
  const matryoshka =
    o.matryoshkaDimensions === 'any' ? [0] : (o.matryoshkaDimensions ?? configMatryoshka(f.modelPath));
  for (const d of matryoshka)
    if (d > f.pooledDim)
      throw new EngineError(
        'INVALID_ARGUMENT',
        `matryoshkaDimensions: ${d} is larger than the model's ${f.pooledDim}`,
        'matryoshkaDimensions',
      );
  return {
    tasks,
    pooling: f.rerank ? '' : f.pooling.modes.join('+'),
    dimensions: f.pooledDim,
    normalize: f.pooling.normalize,
    matryoshka,
    maxInputTokens: Math.min(...limits),
    labels: f.labels,
  };
}
