/** GET /v1/models and /v1/models/{model}: the served base model and every loaded LoRA adapter (`parent` = base). */
import type { Context } from 'koa';
import type { AdapterCard } from '../../engine/types.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { HttpError } from '../shared/http-error.js';

function modelCard(gw: GatewayContext): object {
  return {
    id: gw.info.modelName,
    object: 'model',
    created: Math.floor(gw.info.startedAt / 1000),
    owned_by: 'prism',
    root: gw.info.modelPath,
    parent: null,
    max_model_len: gw.info.maxSeqLen,
  };
}

function adapterCard(gw: GatewayContext, a: AdapterCard): object {
  return {
    id: a.name,
    object: 'model',
    created: Math.floor(a.loadedAt / 1000),
    owned_by: 'prism',
    root: a.path,
    parent: gw.info.modelName,
    max_model_len: gw.info.maxSeqLen,
  };
}

export async function handleListModels(gw: GatewayContext, ctx: Context): Promise<void> {
  const { adapters } = await gw.engine.listAdapters();
  ctx.body = { object: 'list', data: [modelCard(gw), ...adapters.map((a) => adapterCard(gw, a))] };
}

export async function handleGetModel(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  // LoRA names first, then the base model (MindIE's order).
  const { adapters } = await gw.engine.listAdapters();
  const adapter = adapters.find((a) => a.name === model);
  if (adapter) {
    ctx.body = adapterCard(gw, adapter);
    return;
  }
  if (model !== gw.info.modelName)
    throw new HttpError('not_found', `The model '${model}' does not exist`, 'model');
  ctx.body = modelCard(gw);
}
