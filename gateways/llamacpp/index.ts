/**
 * llama.cpp server's pooling routes: POST /embedding (`content`: a text, texts or token ids;
 * [{index, embedding: [[...]]}], the pooled vector inside one more list, as llama.cpp writes
 * it for a pooled model) and POST /reranking (its Jina-shaped rerank, the same answer as
 * vLLM's /rerank). Errors in llama.cpp's OpenAI-style shape.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { openaiErrorFormat } from '../openai/errors.js';
import { readJsonBody } from '../shared/body.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import {
  floats,
  runPooling,
  textsOrTokens,
  textsOrTokensSchema,
  type TextsOrTokens,
} from '../shared/pooling.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { handleRerank } from '../vllm/pooling.js';

interface EmbeddingBody {
  content: TextsOrTokens;
  model?: string | null;
  /** llama.cpp's embd_normalize: 2 Euclidean (its default), -1 none. */
  embd_normalize?: number | null;
}

const validateEmbedding = compileSchema<EmbeddingBody>({
  type: 'object',
  required: ['content'],
  properties: {
    content: textsOrTokensSchema,
    model: nullable({ type: 'string' }),
    embd_normalize: nullable({ enum: [-1, 2] }),
  },
});

async function handleEmbedding(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateEmbedding(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const { result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'embed',
      inputs: textsOrTokens(body.content),
      inputField: 'content',
      normalize: (body.embd_normalize ?? 2) === 2,
    },
    'embd',
  );
  ctx.body = result.outputs.map((v, index) => ({ index, embedding: [floats(v)] }));
}

export function llamacppRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(openaiErrorFormat);
  router.post('/embedding', boundary, (ctx) => handleEmbedding(gw, ctx));
  router.post('/reranking', boundary, async (ctx) =>
    handleRerank(gw, ctx, await readJsonBody(ctx, gw.config.maxRequestBytes), false),
  );
  return router;
}
