/**
 * Test-only runner: the paged-KV simulator (paged-kv-sim.ts) whose sampled tokens are a
 * script instead of a hash — reply k of `replies`, one CharTokenizer character per step, then
 * EOS — for tests that need a "model" to write exact text (tool calls, reasoning). A sequence
 * whose tokens start at position 0 is a new request and takes the next reply. One request at
 * a time, prefix cache off (a cached prompt does not start at position 0).
 */
import type { StepPlan } from '../../native/native.js';
import type { StepOutput } from '../runner.js';
import { EOS } from './char-tokenizer.js';
import { PagedKvSim } from './paged-kv-sim.js';

export class ScriptedSim extends PagedKvSim {
  private reply = -1;
  private next = 0;

  constructor(
    private readonly replies: readonly string[],
    kvBlocks = 512,
    blockSize = 4,
  ) {
    super(kvBlocks, blockSize, 100);
  }

  override run(plan: StepPlan): StepOutput {
    const out = super.run(plan);
    for (let s = 0; s < plan.sample.length; s++) {
      if (plan.positions[plan.seqTokenOffsets[s]] === 0) {
        this.reply++;
        this.next = 0;
      }
      if (!plan.sample[s]) continue;
      const ch = (this.replies[this.reply] ?? '')[this.next++];
      out.tokens[s] = ch === undefined ? EOS : ch.charCodeAt(0) - 32;
    }
    return out;
  }
}
