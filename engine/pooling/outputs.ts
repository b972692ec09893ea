/**
 * From pass outputs to what a request asked for: embeddings cut to their Matryoshka width and
 * then L2-normalised (OpenAI's and vLLM's order), classifier logits through the model's
 * activation (sentence-transformers' CrossEncoder default: sigmoid for one label, softmax for
 * several) unless raw scores were asked for, a reranking decoder's [no, yes] logits as P(yes),
 * and an embedder's score as the cosine of the pair's two embeddings.
 */
import type { PoolingCard, PoolingRequest } from './types.js';

function l2Normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < v.length; i++) v[i]! *= inv;
  return v;
}

/** cos(a, b); 0 when either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0,
    aa = 0,
    bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

function softmax(v: Float32Array): Float32Array {
  let max = -Infinity;
  for (const x of v) max = Math.max(max, x);
  let sum = 0;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) sum += out[i] = Math.exp(v[i]! - max);
  for (let i = 0; i < v.length; i++) out[i]! /= sum;
  return out;
}

export interface OutputContext {
  readonly card: PoolingCard;
  /** The pass outputs are a reranking decoder's [no, yes] logits. */
  readonly rerank: boolean;
  readonly scoreByCosine: boolean;
}

/** One result per request input, from the pass outputs prepareInputs' inputs produced. */
export function finishOutputs(
  req: PoolingRequest,
  ctx: OutputContext,
  passOutputs: readonly Float32Array[],
): Float32Array[] {
  const activation = req.activation ?? true;
  switch (req.task) {
    case 'tokens':
      return [...passOutputs];
    case 'embed': {
      const normalize = req.normalize ?? ctx.card.normalize;
      return passOutputs.map((v) => {
        const out = req.dimensions !== undefined ? v.slice(0, req.dimensions) : v;
        return normalize ? l2Normalize(out) : out;
      });
    }
    case 'classify':
      return passOutputs.map((v) =>
        !activation ? v : v.length === 1 ? Float32Array.of(sigmoid(v[0]!)) : softmax(v),
      );
    case 'score': {
      if (ctx.scoreByCosine) {
        const out: Float32Array[] = [];
        for (let i = 0; i < passOutputs.length; i += 2)
          out.push(Float32Array.of(cosine(passOutputs[i]!, passOutputs[i + 1]!)));
        return out;
      }
      if (ctx.rerank)
        return passOutputs.map((v) => {
          const margin = v[1]! - v[0]!; // log P(yes) - log P(no) over the two
          return Float32Array.of(activation ? sigmoid(margin) : margin);
        });
      return passOutputs.map((v) => Float32Array.of(activation ? sigmoid(v[0]!) : v[0]!));
    }
  }
}
