/** GET /v1/models and /v1/models/{model}: the served base model (adapters are not served by this build). */
import type { Context } from 'koa';
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

export function handleListModels(gw: GatewayContext, ctx: Context): void {
  ctx.body = { object: 'list', data: [modelCard(gw)] };
}

export function handleGetModel(gw: GatewayContext, ctx: Context, model: string): void {
  if (model !== gw.info.modelName)
    throw new HttpError('not_found', `The model '${model}' does not exist`, 'model');
  ctx.body = modelCard(gw);
}
