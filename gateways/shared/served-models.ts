/**
 * The models this gateway serves: the base model, then its loaded LoRA adapters (each with
 * `parent`, the base model's name), as the engine lists them, then the other models behind
 * the same gateway (model-dispatch.ts). One list for GET /v1/models
 * and the management listener's /metrics-json (`prism.models`), so the dashboard shows
 * exactly what clients can call.
 */
import type { GatewayContext } from './gateway-context.js';

export interface ServedModel {
  readonly id: string;
  /** null for the base model; the base model's id for an adapter. */
  readonly parent: string | null;
  /** Weight path (base) or adapter directory. */
  readonly root: string;
  /** Epoch seconds it became servable. */
  readonly created: number;
  /** Whether it takes images (its engine's `EngineInfo.images`; an adapter: its base model's). */
  readonly images: boolean;
}

export async function servedModels(gw: GatewayContext): Promise<ServedModel[]> {
  const { adapters } = await gw.engine.listAdapters();
  return [
    {
      id: gw.info.modelName,
      parent: null,
      root: gw.info.modelPath,
      created: Math.floor(gw.info.startedAt / 1000),
      images: gw.info.images,
    },
    ...adapters.map((a) => ({
      id: a.name,
      parent: gw.info.modelName,
      root: a.path,
      created: Math.floor(a.loadedAt / 1000),
      images: gw.info.images,
    })),
    ...(gw.peers ?? []).map((p) => ({
      id: p.modelName,
      parent: null,
      root: p.modelPath,
      created: Math.floor(p.startedAt / 1000),
      images: p.images,
    })),
  ];
}
