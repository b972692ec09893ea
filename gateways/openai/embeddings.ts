/**
 * POST /v1/embeddings (OpenAI): `input` as a string, strings, token ids or lists of token ids;
 * `dimensions` for Matryoshka models (refused otherwise, by the engine); `encoding_format`
 * float or base64 (the openai SDKs ask for base64 and decode it); usage. vLLM's extras are
 * taken too: truncate_prompt_tokens, add_special_tokens, normalize, priority.
 */
import type { Context } from 'koa';
import { readJsonBody } from '../shared/body.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import {
  base64Floats,
  floats,
  runPooling,
  textsOrTokens,
  textsOrTokensSchema,
  vllmPriority,
  vllmPrioritySchema,
  vllmTruncation,
  vllmTruncationSchema,
  type TextsOrTokens,
} from '../shared/pooling.js';
import { compileSchema, nullable } from '../shared/schema.js';

const embeddingsSchema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: nullable({ type: 'string' }),
    input: textsOrTokensSchema,
    encoding_format: nullable({ enum: ['float', 'base64'] }),
    dimensions: nullable({ type: 'integer', minimum: 1 }),
    user: nullable({ type: 'string' }),
    truncate_prompt_tokens: vllmTruncationSchema,
    priority: vllmPrioritySchema,
    add_special_tokens: nullable({ type: 'boolean' }),
    normalize: nullable({ type: 'boolean' }),
  },
};

interface EmbeddingsBody {
  model?: string | null;
  input: TextsOrTokens;
  encoding_format?: 'float' | 'base64' | null;
  dimensions?: number | null;
  truncate_prompt_tokens?: number | null;
  priority?: number | null;
  add_special_tokens?: boolean | null;
  normalize?: boolean | null;
}

const validateEmbeddings = compileSchema<EmbeddingsBody>(embeddingsSchema);

export async function handleEmbeddings(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateEmbeddings(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const { model, result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'embed',
      inputs: textsOrTokens(body.input),
      inputField: 'input',
      ...vllmTruncation(body.truncate_prompt_tokens),
      ...vllmPriority(body.priority),
      ...(body.dimensions != null ? { dimensions: body.dimensions } : {}),
      ...(body.add_special_tokens != null ? { addSpecialTokens: body.add_special_tokens } : {}),
      ...(body.normalize != null ? { normalize: body.normalize } : {}),
    },
    'embd',
  );
  const base64 = body.encoding_format === 'base64';
  ctx.body = {
    object: 'list',
    data: result.outputs.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: base64 ? base64Floats(v) : floats(v),
    })),
    model,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}
