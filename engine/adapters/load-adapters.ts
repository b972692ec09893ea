/**
 * Wires adapters into a freshly loaded model: sizes the native LoRA slots, builds the
 * AdapterManager over the addon, and loads the static adapters (LoraModules). Called by
 * engine/load-engine.ts; a static adapter that fails to load fails the start with a
 * message naming its LoraModules entry.
 */
import {
  createAdapter,
  disposeAdapter,
  modelInfo,
  setAdapterSlot,
  type ContextHandle,
  type ModelHandle,
} from '../../native/native.js';
import { EngineError } from '../errors.js';
import type { LoraOptions } from '../options.js';
import { AdapterManager, AdapterOpError } from './manager.js';
import { baseShapeOf } from './native-adapter.js';
import { readPeftAdapter, type PeftAdapter } from './peft-reader.js';
import { checkAdapterPath } from './rules.js';

export interface LoraPlan {
  /** Native context options. */
  readonly maxLoras: number;
  readonly maxLoraRank: number;
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
  return { maxLoras: Math.max(lora.maxLoras, lora.modules.length), maxLoraRank: rank, prepared };
}

export function startAdapters(
  model: ModelHandle,
  ctx: ContextHandle,
  lora: LoraOptions,
  plan: LoraPlan,
  stepping: () => boolean,
  storage: 'F32' | 'F16' = 'F16',
): AdapterManager {
  const shape = baseShapeOf(modelInfo(model));
  const manager = new AdapterManager(
    {
      maxLoras: plan.maxLoras,
      maxLoraRank: lora.maxLoraRank,
      dynamic: lora.maxLoras > 0 && lora.maxLoraRank > 0,
    },
    {
      read: (dir) => plan.prepared.get(dir) ?? readPeftAdapter(dir, shape),
      bind: (slot, adapter) => {
        const handle = createAdapter(model, adapter.layers, storage);
        setAdapterSlot(ctx, slot, handle);
        disposeAdapter(handle); // the slot keeps its own reference
      },
      unbind: (slot) => setAdapterSlot(ctx, slot, null),
    },
    stepping,
  );
  lora.modules.forEach((m, i) => {
    try {
      manager.load(m.name, m.path, true);
    } catch (e) {
      if (e instanceof AdapterOpError)
        throw new EngineError('INVALID_ARGUMENT', `${at(i, m.name)}: ${e.message}`, 'LoraModules');
      throw e;
    }
  });
  (plan.prepared as Map<string, PeftAdapter>).clear(); // a later dynamic load re-reads its files
  return manager;
}
