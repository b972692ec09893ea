/**
 * An encoder's runner (engine/runner.ts's `Runner`): the native encoder context (no KV cache,
 * native/src/encoder/) runs one scheduled batch of whole prompts packed end to end and returns
 * each sequence's state in the step output's `states` (`Sequence.pooled` says which: the
 * pooled vector, every token's state, or the classifier's scores). A batch that mixes kinds
 * runs one encoder pass per kind. Nothing is sampled: each item's token is a placeholder the
 * pooling extension takes (pooling-extension.ts).
 */
import { encode, type EncoderContextHandle } from '../../native/native.js';
import type { Runner, StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { PooledOutput } from '../sequence.js';

/** Values per input of each output kind ('tokens': per token). */
export interface EncoderWidths {
  readonly pooled: number;
  readonly scores: number;
  readonly tokens: number;
}

export class EncoderRunner implements Runner {
  readonly keepsKv = false;
  /** No pool: the status reports none (blocks of one token, none of them). */
  readonly blockSize = 1;
  readonly kvBlocks = 0;
  /** Encoder passes run (one per output kind of each step). */
  passes = 0;

  constructor(
    private readonly ctx: EncoderContextHandle,
    private readonly width: EncoderWidths,
  ) {}

  async step(batch: ScheduledBatch): Promise<StepOutput> {
    const K = batch.items.length;
    const states = new Array<Float32Array | undefined>(K);
    const kinds = new Map<PooledOutput['output'], number[]>();
    batch.items.forEach((item, k) => {
      const pooled = item.seq.pooled;
      if (!pooled || item.start !== 0 || item.numNew !== item.seq.promptLen)
        throw new Error(`encoder step: sequence ${item.seq.requestId} is not a whole pooling prompt`);
      const rows = kinds.get(pooled.output);
      if (rows) rows.push(k);
      else kinds.set(pooled.output, [k]);
    });
    for (const [output, rows] of kinds) {
      const offsets = new Int32Array(rows.length + 1);
      rows.forEach((k, i) => (offsets[i + 1] = offsets[i]! + batch.items[k]!.numNew));
      const tokens = new Int32Array(offsets[rows.length]!);
      const types = new Int32Array(tokens.length);
      rows.forEach((k, i) => {
        const seq = batch.items[k]!.seq;
        tokens.set(seq.tokens.slice(0, seq.promptLen), offsets[i]!);
        if (seq.pooled!.typeIds) types.set(seq.pooled!.typeIds, offsets[i]!);
      });
      const out = await encode(this.ctx, { tokens, tokenTypes: types, seqOffsets: offsets, output });
      this.passes++;
      const w = this.width[output];
      rows.forEach((k, i) => {
        states[k] =
          output === 'tokens'
            ? out.slice(offsets[i]! * w, offsets[i + 1]! * w)
            : out.slice(i * w, (i + 1) * w);
      });
    }
    return {
      tokens: new Int32Array(K),
      logprobs: new Float32Array(K),
      topLogprobsStride: 0,
      topLogprobIds: new Int32Array(0),
      topLogprobValues: new Float32Array(0),
      states,
    };
  }
}
