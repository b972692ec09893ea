/**
 * The model runner: one scheduled batch in, sampled tokens out. The real one hands the plan
 * to the native core (off the JS thread); the engine core depends only on `Runner`, so the
 * scheduler's unit tests can drive it with a scripted runner while the engine itself always
 * runs this one.
 */
import { contextInfo, step, type ContextHandle, type StepResult } from '../native/native.js';
import type { ScheduledBatch } from './scheduler.js';
import { buildStepPlan } from './step-plan.js';

/** The part of a native StepResult the engine reads. */
export type StepOutput = Pick<
  StepResult,
  'tokens' | 'logprobs' | 'topLogprobsStride' | 'topLogprobIds' | 'topLogprobValues'
>;

export interface Runner {
  readonly blockSize: number;
  readonly kvBlocks: number;
  step(batch: ScheduledBatch): Promise<StepOutput>;
}

export class NativeRunner implements Runner {
  readonly blockSize: number;
  readonly kvBlocks: number;

  constructor(private readonly ctx: ContextHandle) {
    const info = contextInfo(ctx);
    this.blockSize = info.blockSize;
    this.kvBlocks = info.kvBlocks;
  }

  step(batch: ScheduledBatch): Promise<StepOutput> {
    return step(this.ctx, buildStepPlan(batch, this.blockSize));
  }
}
