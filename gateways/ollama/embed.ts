/**
 * Ollama's embedding routes on a pooling model: POST /api/embed (`input`: a text or texts;
 * `truncate`, default true, cuts an over-long input to the model's limit; `dimensions`; the
 * answer's vectors L2-normalised, as Ollama's are) and the older POST /api/embeddings
 * (`prompt`: one text; its vector as the model computes it).
 */
import type { Context } from 'koa';
import { readJsonBody } from '../shared/body.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { floats, runPooling } from '../shared/pooling.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { resolveOllamaModel } from './generate.js';

const ns = (ms: number): number => Math.round(ms * 1e6);

interface EmbedBody {
  model: string;
  input: string | string[];
  truncate?: boolean | null;
  dimensions?: number | null;
  keep_alive?: unknown;
  options?: unknown;
}

const validateEmbed = compileSchema<EmbedBody>({
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    truncate: nullable({ type: 'boolean' }),
    dimensions: nullable({ type: 'integer', minimum: 1 }),
  },
});

export async function handleEmbed(gw: GatewayContext, ctx: Context): Promise<void> {
  const started = performance.now();
  const body = validateEmbed(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const model = resolveOllamaModel(gw, body.model);
  const texts = typeof body.input === 'string' ? [body.input] : body.input;
  const { result } = await runPooling(
    gw,
    ctx,
    model,
    {
      task: 'embed',
      inputs: texts.map((text) => ({ text })),
      inputField: 'input',
      normalize: true,
      ...((body.truncate ?? true) ? { truncate: { direction: 'right' as const } } : {}),
      ...(body.dimensions != null ? { dimensions: body.dimensions } : {}),
    },
    'embed',
  );
  ctx.body = {
    model: body.model,
    embeddings: result.outputs.map(floats),
    total_duration: ns(performance.now() - started),
    load_duration: 0,
    prompt_eval_count: result.promptTokens,
  };
}

const validateEmbeddings = compileSchema<{ model: string; prompt: string }>({
  type: 'object',
  required: ['model', 'prompt'],
  properties: { model: { type: 'string', minLength: 1 }, prompt: { type: 'string' } },
});

export async function handleEmbeddings(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateEmbeddings(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const { result } = await runPooling(
    gw,
    ctx,
    resolveOllamaModel(gw, body.model),
    {
      task: 'embed',
      inputs: [{ text: body.prompt }],
      inputField: 'prompt',
      truncate: { direction: 'right' },
    },
    'embed',
  );
  ctx.body = { embedding: floats(result.outputs[0]!) };
}
