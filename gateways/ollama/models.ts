/**
 * Ollama's model routes: `/api/tags` (the served model and its adapters), `/api/show`,
 * `/api/ps`, `/api/version`; and the ones that manage a model store, which a server of one
 * loaded model does not have (`/api/pull`, `/api/push`, `/api/create`, `/api/copy`,
 * `/api/delete`, `/api/blobs/…`): 501 with Ollama's error body.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import type { Context } from 'koa';
import { readJsonBody } from '../shared/body.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { HttpError, invalid } from '../shared/http-error.js';
import { servedModels, type ServedModel } from '../shared/served-models.js';
import { resolveOllamaModel } from './generate.js';

/** Ollama lists names with their tag. */
const tagged = (id: string): string => (id.includes(':') ? id : `${id}:latest`);

function details(gw: GatewayContext, m: ServedModel): Record<string, unknown> {
  return {
    parent_model: m.parent ?? '',
    format: gw.info.modelPath.endsWith('.gguf') ? 'gguf' : 'safetensors',
    family: gw.info.architecture,
    families: [gw.info.architecture],
    parameter_size: '',
    quantization_level: gw.info.dtype,
  };
}

/** Bytes on disk of the model file, when this process can see it (a gateway apart from its engine may not). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function entry(gw: GatewayContext, m: ServedModel): Record<string, unknown> {
  return {
    name: tagged(m.id),
    model: tagged(m.id),
    modified_at: new Date(m.created * 1000).toISOString(),
    size: sizeOf(m.root),
    // The engine's fingerprint of the weights (and the adapter's name): equal digests, equal models.
    digest: createHash('sha256').update(`${gw.info.modelFingerprint}\0${m.id}`).digest('hex'),
    details: details(gw, m),
  };
}

export async function handleTags(gw: GatewayContext, ctx: Context): Promise<void> {
  ctx.body = { models: (await servedModels(gw)).map((m) => entry(gw, m)) };
}

async function findModel(gw: GatewayContext, name: string): Promise<ServedModel> {
  const id = resolveOllamaModel(gw, name);
  const found = (await servedModels(gw)).find((m) => m.id === id);
  if (!found) throw new HttpError('not_found', `model '${name}' not found`, 'model');
  return found;
}

export async function handleShow(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = (await readJsonBody(ctx, gw.config.maxRequestBytes)) as Record<string, unknown> | null;
  // `name` is the older spelling of `model`.
  const name = body?.model ?? body?.name;
  if (typeof name !== 'string' || name === '') throw invalid('model', 'is required');
  const m = await findModel(gw, name);
  const arch = gw.info.architecture;
  ctx.body = {
    modelfile: '',
    parameters: '',
    template: '',
    details: details(gw, m),
    model_info: {
      'general.architecture': arch,
      [`${arch}.context_length`]: gw.info.contextLength,
      [`${arch}.vocab_size`]: gw.info.vocabSize,
    },
    // Ollama's names: an embedding model embeds; a generation model completes and calls tools,
    // and one that takes images (`images`, gateways/ollama/images.ts) sees.
    capabilities: gw.info.pooling
      ? ['embedding']
      : ['completion', 'tools', ...(gw.info.images ? ['vision'] : [])],
    modified_at: new Date(m.created * 1000).toISOString(),
  };
}

/** A loaded model stays loaded while the server runs: its expiry is a century away. */
const RESIDENT_MS = 100 * 365 * 24 * 3600 * 1000;

export async function handlePs(gw: GatewayContext, ctx: Context): Promise<void> {
  ctx.body = {
    models: (await servedModels(gw)).map((m) => ({
      ...entry(gw, m),
      expires_at: new Date(Date.now() + RESIDENT_MS).toISOString(),
      size_vram: 0,
      context_length: gw.info.maxSeqLen,
    })),
  };
}

export function handleVersion(gw: GatewayContext, ctx: Context): void {
  ctx.body = { version: gw.version };
}

/** The model-store routes: refused, naming what to do instead. */
export function refuseStore(what: string): (ctx: Context) => void {
  return () => {
    throw new HttpError(
      'not_supported',
      `${what} is not supported: this server serves the model it was started with (prism serve --model PATH); LoRA adapters load through the management API`,
    );
  };
}
