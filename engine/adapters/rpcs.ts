/**
 * The engine's adapter RPCs (gRPC LoadAdapter / UnloadAdapter / ListAdapters, and the
 * management routes through them) over its AdapterManager; `undefined` when the engine serves
 * no adapters, which each RPC answers in its own way.
 */
import { EngineError } from '../errors.js';
import type { AdapterList } from '../types.js';
import type { AdapterManager } from './manager.js';

export async function loadAdapterRpc(
  a: AdapterManager | undefined,
  name: string,
  path: string,
): Promise<{ message: string; rank: number; loadMs: number }> {
  if (!a) {
    throw new EngineError(
      'UNAVAILABLE',
      'dynamic LoRA loading is off: set ModelDeployConfig.maxLoras and maxLoraRank > 0',
    );
  }
  const message = await a.load(name, path);
  const e = a.list().find((x) => x.name === name)!;
  return { message, rank: e.rank, loadMs: e.loadMs };
}

export function unloadAdapterRpc(a: AdapterManager | undefined, name: string): { message: string } {
  if (!a) throw new EngineError('NOT_FOUND', `The LoRA adapter '${name}' cannot be found.`, 'lora_name');
  return { message: a.unload(name) };
}

export function listAdaptersRpc(a: AdapterManager | undefined): AdapterList {
  return {
    adapters: (a?.list() ?? []).map((e) => ({
      name: e.name,
      path: e.path,
      rank: e.rank,
      generation: e.generation,
      activeRequests: e.users,
      loadedAt: e.loadedAt,
    })),
    maxLoras: a?.limits.maxLoras ?? 0,
    maxLoraRank: a?.limits.maxLoraRank ?? 0,
  };
}
