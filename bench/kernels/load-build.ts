/**
 * One native build of the addon with the model loaded into a context of its own: how the
 * scripts that step several builds side by side in one process (ab-steps.ts, verify-steps.ts)
 * start each build. Each addon file is a separate dlopen (the same path twice is one addon:
 * require() caches it), so several builds coexist in one process; each context holds its own
 * copy of the weights.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { ContextHandle, NativeAddon } from '../../native/native.js';
import { greedyPlan } from '../engine/plan.js';

const require = createRequire(import.meta.url);

export interface BuildContext {
  readonly addon: NativeAddon;
  readonly ctx: ContextHandle;
}

export interface BuildOptions {
  /** KV blocks of the context's one sequence. */
  readonly kvBlocks: number;
  readonly blockSize: number;
  readonly threads: number;
}

/**
 * The addon named by `arg` with the model at `modelPath` in a one-sequence context of up to
 * 512 batch tokens. `arg` is a build as the scripts take it, `FILE.node[@TUNING]`: the addon
 * and the decode tuning (ContextOptions.decodeTuning) its context takes, so one addon can
 * stand for several settings side by side; without `@`, the context's default.
 */
export async function openBuild(
  arg: string,
  modelPath: string,
  options: BuildOptions,
): Promise<BuildContext> {
  const at = arg.indexOf('@');
  const file = at < 0 ? arg : arg.slice(0, at);
  const decodeTuning = at < 0 ? undefined : arg.slice(at + 1);
  // Resolved against the working directory: require() alone would resolve a relative path
  // against this file.
  const addon = require(resolve(file)) as NativeAddon;
  const model = await addon.loadModel(modelPath, undefined);
  const ctx = addon.createContext(model, {
    kvBlocks: options.kvBlocks,
    blockSize: options.blockSize,
    maxBatchTokens: 512,
    maxSeqs: 1,
    threads: options.threads,
    ...(decodeTuning === undefined ? {} : { decodeTuning }),
  });
  return { addon, ctx };
}

/** One step of `prompt` from position 0 over `blocks`; returns the token it samples. */
export async function prefill(
  build: BuildContext,
  prompt: readonly number[],
  blocks: readonly number[],
  blockSize: number,
): Promise<number> {
  const first = await build.addon.step(
    build.ctx,
    greedyPlan([{ tokens: prompt, startPosition: 0, blocks, sample: true }], blockSize),
  );
  return first.tokens[0];
}
