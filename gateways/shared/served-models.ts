/**
 * The models this gateway serves: the base model, then its adapters (each with `parent`, the
 * base model's name). One list for GET /v1/models and the management listener's
 * /metrics-json (`prism.models`), so the dashboard shows exactly what clients can call.
 * This build serves no adapters yet, so the list holds the base model only.
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
}

export async function servedModels(gw: GatewayContext): Promise<ServedModel[]> {
  return [
    {
      id: gw.info.modelName,
      parent: null,
      root: gw.info.modelPath,
      created: Math.floor(gw.info.startedAt / 1000),
    },
  ];
}
