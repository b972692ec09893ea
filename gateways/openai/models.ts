/**
 * GET /v1/models and /v1/models/{model}: the served base model and every loaded LoRA adapter
 * (`parent` = base), from gateways/shared/served-models.ts. Besides vLLM's card, Prism says what
 * a model takes: `input_modalities` (`["text"]`, or `["text", "image"]` for a model that takes
 * image parts) and, for one that takes images, `max_image_bytes` (`--max-image-bytes`), so a
 * client such as the playground can offer and bound an image upload.
 */
import type { Context } from 'koa';
import type { GatewayContext } from '../shared/gateway-context.js';
import { HttpError } from '../shared/http-error.js';
import { servedModels, type ServedModel } from '../shared/served-models.js';

function modelCard(gw: GatewayContext, m: ServedModel): object {
  return {
    id: m.id,
    object: 'model',
    created: m.created,
    owned_by: 'prism',
    root: m.root,
    parent: m.parent,
    max_model_len: gw.info.maxSeqLen,
    input_modalities: m.images ? ['text', 'image'] : ['text'],
    ...(m.images ? { max_image_bytes: gw.config.media.maxImageBytes } : {}),
  };
}

export async function handleListModels(gw: GatewayContext, ctx: Context): Promise<void> {
  ctx.body = { object: 'list', data: (await servedModels(gw)).map((m) => modelCard(gw, m)) };
}

export async function handleGetModel(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  // LoRA names first, then the base model (MindIE's order); an adapter never takes the base name.
  const models = await servedModels(gw);
  const found = models.find((m) => m.id === model && m.parent !== null) ?? models.find((m) => m.id === model);
  if (!found) throw new HttpError('not_found', `The model '${model}' does not exist`, 'model');
  ctx.body = modelCard(gw, found);
}
