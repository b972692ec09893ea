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
  /** ContextOptions.decodeTuning; left out, the context's default. */
  readonly decodeTuning?: string;
}

/**
 * A build argument as the scripts take it, `FILE.node[@TUNING]`: the addon and the decode
 * tuning (ContextOptions.decodeTuning) its context takes, so one addon can stand for several
 * settings side by side.
 */
export function buildArg(arg: string): { file: string; decodeTuning?: string } {
  const at = arg.indexOf('@');
  return at < 0 ? { file: arg } : { file: arg.slice(0, at), decodeTuning: arg.slice(at + 1) };
}

/** The addon at `file` with the model at `modelPath` in a one-sequence context of up to 512 batch tokens. */
export async function openBuild(
  file: string,
  modelPath: string,
  options: BuildOptions,
): Promise<BuildContext> {
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
    ...(options.decodeTuning === undefined ? {} : { decodeTuning: options.decodeTuning }),
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
