/**
 * Hugging Face Text Embeddings Inference's API: POST /embed (vectors), /embed_all (every
 * token's vector), /rerank (a query against `texts`, best first), /predict (classifier label
 * scores), and POST / (TEI's compat route: embed or predict by the model), GET /info. Bodies
 * and answers as TEI's router writes them; errors {"error", "error_type"} with 422 for bad
 * input, as TEI's.
 */
import type { Context } from 'koa';
import { MAX_POOLING_INPUTS, type PoolingInput } from '../../engine/api.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
import {
  base64Floats,
  floats,
  runPooling,
  teiTruncation,
  textsOrTokens,
  textsOrTokensSchema,
  type TextsOrTokens,
} from '../shared/pooling.js';
import { compileSchema, nullable } from '../shared/schema.js';

const truncationFields = {
  truncate: nullable({ type: 'boolean' }),
  truncation_direction: nullable({ enum: ['Left', 'Right', 'left', 'right'] }),
};

interface EmbedBody {
  model?: string | null;
  inputs: TextsOrTokens;
  normalize?: boolean | null;
  truncate?: boolean | null;
  truncation_direction?: string | null;
  dimensions?: number | null;
  prompt_name?: string | null;
  encoding_format?: 'float' | 'base64' | null;
}

const validateEmbed = compileSchema<EmbedBody>({
  type: 'object',
  required: ['inputs'],
  properties: {
    model: nullable({ type: 'string' }),
    inputs: textsOrTokensSchema,
    normalize: nullable({ type: 'boolean' }),
    dimensions: nullable({ type: 'integer', minimum: 1 }),
    prompt_name: nullable({ type: 'string' }),
    encoding_format: nullable({ enum: ['float', 'base64'] }),
    ...truncationFields,
  },
});

/** POST /embed and /embed_all: one vector per input ([[...]] even for one), or every token's. */
export async function handleEmbed(
  gw: GatewayContext,
  ctx: Context,
  raw: unknown,
  all: boolean,
): Promise<void> {
  const body = validateEmbed(raw);
  if (body.prompt_name) throw invalid('prompt_name', 'this model has no named prompts');
  const { result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: all ? 'tokens' : 'embed',
      inputs: textsOrTokens(body.inputs),
      inputField: 'inputs',
      // TEI normalises unless told not to, whatever the model's files say.
      ...(all ? {} : { normalize: body.normalize ?? true }),
      ...(body.dimensions != null ? { dimensions: body.dimensions } : {}),
      ...teiTruncation(body.truncate, body.truncation_direction),
    },
    'tei',
  );
  if (!all) {
    ctx.body = result.outputs.map((v) => (body.encoding_format === 'base64' ? base64Floats(v) : floats(v)));
    return;
  }
  const width = result.outputs[0] ? result.outputs[0].length / result.tokenCounts[0]! : 0;
  ctx.body = result.outputs.map((v, i) =>
    Array.from({ length: result.tokenCounts[i]! }, (_, t) => floats(v.subarray(t * width, (t + 1) * width))),
  );
}

interface RerankBody {
  model?: string | null;
  query: string;
  texts: string[];
  raw_scores?: boolean | null;
  return_text?: boolean | null;
  truncate?: boolean | null;
  truncation_direction?: string | null;
}

const validateRerank = compileSchema<RerankBody>({
  type: 'object',
  required: ['query', 'texts'],
  properties: {
    model: nullable({ type: 'string' }),
    query: { type: 'string' },
    texts: { type: 'array', items: { type: 'string' } },
    raw_scores: nullable({ type: 'boolean' }),
    return_text: nullable({ type: 'boolean' }),
    ...truncationFields,
  },
});

/** POST /rerank (a body with `texts`): [{index, score, text?}] best first. */
export async function handleTeiRerank(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = validateRerank(raw);
  const { result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'score',
      inputs: body.texts.map((t) => ({ pair: [body.query, t] })),
      inputField: 'texts',
      activation: !(body.raw_scores ?? false),
      ...teiTruncation(body.truncate, body.truncation_direction),
    },
    'tei',
  );
  ctx.body = result.outputs
    .map((v, index) => ({ index, score: v[0]!, ...(body.return_text ? { text: body.texts[index] } : {}) }))
    .sort((a, b) => b.score - a.score);
}

type PredictInput = string | string[] | string[][];
interface PredictBody {
  model?: string | null;
  inputs: PredictInput;
  raw_scores?: boolean | null;
  truncate?: boolean | null;
  truncation_direction?: string | null;
}

const validatePredict = compileSchema<PredictBody>({
  type: 'object',
  required: ['inputs'],
  properties: {
    model: nullable({ type: 'string' }),
    inputs: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } },
        { type: 'array', items: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } } },
      ],
    },
    raw_scores: nullable({ type: 'boolean' }),
    ...truncationFields,
  },
});

/** TEI's reading of `inputs`: a text, [text] or [text, text] (a pair), or a batch of those. */
function predictInputs(inputs: PredictInput): { items: PoolingInput[]; batch: boolean } {
  const one = (x: string | string[]): PoolingInput =>
    typeof x === 'string' ? { text: x } : x.length === 2 ? { pair: [x[0]!, x[1]!] } : { text: x[0]! };
  if (typeof inputs === 'string') return { items: [one(inputs)], batch: false };
  if (inputs.every((x) => typeof x === 'string')) return { items: [one(inputs as string[])], batch: false };
  return { items: (inputs as string[][]).map(one), batch: true };
}

/** POST /predict: per input, [{label, score}] best first; a batch answers a list of those. */
export async function handlePredict(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = validatePredict(raw);
  const { items, batch } = predictInputs(body.inputs);
  const { result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'classify',
      inputs: items,
      inputField: 'inputs',
      activation: !(body.raw_scores ?? false),
      ...teiTruncation(body.truncate, body.truncation_direction),
    },
    'tei',
  );
  const labels = result.labels ?? [];
  const answers = result.outputs.map((v) =>
    Array.from(v, (score, i) => ({ label: labels[i] ?? `LABEL_${i}`, score })).sort(
      (a, b) => b.score - a.score,
    ),
  );
  ctx.body = batch ? answers : answers[0];
}

/** GET /info as TEI answers it, for a pooling model. */
export function teiInfo(gw: GatewayContext): object {
  const card = gw.info.pooling!;
  const labels = Object.fromEntries(card.labels.map((l, i) => [String(i), l]));
  const label2id = Object.fromEntries(card.labels.map((l, i) => [l, i]));
  const modelType = card.tasks.includes('embed')
    ? { embedding: { pooling: card.pooling } }
    : card.labels.length === 1
      ? { reranker: { id2label: labels, label2id } }
      : { classifier: { id2label: labels, label2id } };
  return {
    model_id: gw.info.modelName,
    model_sha: null,
    model_dtype: gw.info.dtype.toLowerCase(),
    model_type: modelType,
    // Connections the service listener keeps open at once (ServerConfig.limits.maxConnections).
    max_concurrent_requests: gw.config.limits.maxConnections,
    max_input_length: card.maxInputTokens,
    max_batch_tokens: gw.info.maxPrefillTokens,
    max_batch_requests: gw.info.maxBatchSize,
    max_client_batch_size: MAX_POOLING_INPUTS,
    auto_truncate: false,
    tokenization_workers: 1,
    version: gw.version,
    sha: null,
    docker_label: null,
  };
}
