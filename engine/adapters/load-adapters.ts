/**
 * Wires adapters into a freshly loaded model: sizes the native LoRA slots, builds the
 * AdapterManager over the addon, and loads the static adapters (LoraModules). Called by
 * engine/load-engine.ts; a static adapter that fails to load fails the start with a
 * message naming its LoraModules entry.
 */
import {
  createAdapterAsync,
  disposeAdapter,
  modelInfo,
  setAdapterSlot,
  type AdapterHandle,
  type ContextHandle,
  type ModelHandle,
} from '../../native/native.js';
import { EngineError } from '../errors.js';
import type { LoraOptions } from '../options.js';
import { AdapterManager, AdapterOpError } from './manager.js';
import { baseShapeOf } from './native-adapter.js';
import { readPeftAdapter, type PeftAdapter } from './peft-reader.js';
import { readPeftAdapterOffThread } from './read-off-thread.js';
import { checkAdapterPath } from './rules.js';

export interface LoraPlan {
  /** Native context options: slots (distinct adapters per step) and the largest rank. */
  readonly maxLoras: number;
  readonly maxLoraRank: number;
  /** Adapters loaded at once (≥ maxLoras; more than the slots means slot swapping). */
  readonly maxCpuLoras: number;
  /** Static adapters already read (their rank sized the slots). */
  readonly prepared: ReadonlyMap<string, PeftAdapter>;
}

const at = (i: number, name: string) => `ModelDeployConfig.LoraModules[${i}] '${name}'`;

/** Reads the static adapters (path-checked) and picks the native slot count and rank. */
export function planLora(model: ModelHandle, lora: LoraOptions | undefined): LoraPlan | undefined {
  if (!lora || (lora.maxLoras === 0 && lora.modules.length === 0)) return undefined;
  const shape = baseShapeOf(modelInfo(model));
  const prepared = new Map<string, PeftAdapter>();
  let rank = lora.maxLoraRank;
  lora.modules.forEach((m, i) => {
    const problem = checkAdapterPath(m.path);
    if (problem)
      throw new EngineError('INVALID_ARGUMENT', `${at(i, m.name)}: path: ${problem}`, 'LoraModules');
    try {
      const a = readPeftAdapter(m.path, shape);
      prepared.set(m.path, a);
      rank = Math.max(rank, a.rank);
    } catch (e) {
      throw new EngineError('INVALID_ARGUMENT', `${at(i, m.name)}: ${(e as Error).message}`, 'LoraModules');
    }
  });
  const slots = lora.maxLoras > 0 ? lora.maxLoras : lora.modules.length;
  return {
    maxLoras: slots,
    maxLoraRank: rank,
    maxCpuLoras: Math.max(lora.maxCpuLoras ?? 0, slots, lora.modules.length),
    prepared,
  };
}

export async function startAdapters(
  model: ModelHandle,
  ctx: ContextHandle,
  lora: LoraOptions,
  plan: LoraPlan,
  stepping: () => boolean,
  storage: 'F32' | 'F16' = 'F16',
): Promise<AdapterManager> {
  const shape = baseShapeOf(modelInfo(model));
  const manager = new AdapterManager(
    {
      maxLoras: plan.maxLoras,
      maxCpuLoras: plan.maxCpuLoras,
      maxLoraRank: lora.maxLoraRank,
      dynamic: lora.maxLoras > 0 && lora.maxLoraRank > 0,
    },
    {
      read: (dir) => {
        const ready = plan.prepared.get(dir);
        return ready ? Promise.resolve(ready) : readPeftAdapterOffThread(dir, shape);
      },
      create: (adapter) => createAdapterAsync(model, adapter.layers, storage),
      dispose: (handle) => disposeAdapter(handle as AdapterHandle),
      bind: (slot, handle) => setAdapterSlot(ctx, slot, handle as AdapterHandle),
      unbind: (slot) => setAdapterSlot(ctx, slot, null),
    },
    stepping,
  );
  for (const [i, m] of lora.modules.entries()) {
    try {
      await manager.load(m.name, m.path, true);
    } catch (e) {
      if (e instanceof AdapterOpError)
        throw new EngineError('INVALID_ARGUMENT', `${at(i, m.name)}: ${e.message}`, 'LoraModules');
      throw e;
    }
  }
  (plan.prepared as Map<string, PeftAdapter>).clear(); // a later dynamic load re-reads its files
  return manager;
}
