/**
 * vLLM's pooling routes: POST /pooling (the model's pooled output of each input), /score and
 * /v1/score (text_1 against text_2: one text against many, or pairwise), /rerank, /v1/rerank
 * and /v2/rerank (a query against documents in the Jina / Cohere shape, best first, top_n),
 * /classify (label probabilities); each takes vLLM's truncate_prompt_tokens and priority.
 * Errors in the OpenAI shape, as vLLM answers them.
 */
import type { Context } from 'koa';
import type { PoolingInput, PoolingTask } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
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

const created = (): number => Math.floor(Date.now() / 1000);
const usage = (tokens: number) => ({ prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 });

const poolingSchema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: nullable({ type: 'string' }),
    input: textsOrTokensSchema,
    encoding_format: nullable({ enum: ['float', 'base64'] }),
    truncate_prompt_tokens: vllmTruncationSchema,
    priority: vllmPrioritySchema,
    add_special_tokens: nullable({ type: 'boolean' }),
    dimensions: nullable({ type: 'integer', minimum: 1 }),
  },
};
interface PoolingBody {
  model?: string | null;
  input: TextsOrTokens;
  encoding_format?: 'float' | 'base64' | null;
  truncate_prompt_tokens?: number | null;
  priority?: number | null;
  add_special_tokens?: boolean | null;
  dimensions?: number | null;
}
const validatePooling = compileSchema<PoolingBody>(poolingSchema);

/** The task /pooling runs: the model's own pooled output (an embedder's vector, a classifier's logits). */
function poolingTask(gw: GatewayContext): PoolingTask {
  const tasks = gw.info.pooling?.tasks ?? [];
  return tasks.includes('embed')
    ? 'embed'
    : tasks.includes('classify')
      ? 'classify'
      : tasks.includes('tokens')
        ? 'tokens'
        : 'embed';
}

export async function handlePooling(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validatePooling(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const task = poolingTask(gw);
  const { id, model, result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task,
      inputs: textsOrTokens(body.input),
      ...vllmTruncation(body.truncate_prompt_tokens),
      ...vllmPriority(body.priority),
      ...(body.add_special_tokens != null ? { addSpecialTokens: body.add_special_tokens } : {}),
      ...(body.dimensions != null ? { dimensions: body.dimensions } : {}),
      // The pooler's raw output: a classifier's logits, not probabilities.
      ...(task === 'classify' ? { activation: false } : {}),
    },
    'pool',
  );
  const base64 = body.encoding_format === 'base64';
  ctx.body = {
    id,
    object: 'list',
    created: created(),
    model,
    data: result.outputs.map((v, index) => ({
      index,
      object: 'pooling',
      data: base64 ? base64Floats(v) : floats(v),
    })),
    usage: usage(result.promptTokens),
  };
}

const textOrTexts = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] };

const scoreSchema = {
  type: 'object',
  required: ['text_1', 'text_2'],
  properties: {
    model: nullable({ type: 'string' }),
    text_1: textOrTexts,
    text_2: textOrTexts,
    truncate_prompt_tokens: vllmTruncationSchema,
    priority: vllmPrioritySchema,
  },
};
interface ScoreBody {
  model?: string | null;
  text_1: string | string[];
  text_2: string | string[];
  truncate_prompt_tokens?: number | null;
  priority?: number | null;
}
const validateScore = compileSchema<ScoreBody>(scoreSchema);

/** vLLM's pairing: one text_1 against every text_2, or text_1[i] with text_2[i]. */
function scorePairs(a: string | string[], b: string | string[]): PoolingInput[] {
  const first = typeof a === 'string' ? [a] : a;
  const second = typeof b === 'string' ? [b] : b;
  if (first.length === 1) return second.map((d) => ({ pair: [first[0]!, d] }));
  if (first.length !== second.length)
    throw invalid(
      'text_2',
      `must have as many texts as text_1 (${first.length}), or text_1 a single text; got ${second.length}`,
    );
  return first.map((q, i) => ({ pair: [q, second[i]!] }));
}

export async function handleScore(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateScore(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const { id, model, result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'score',
      inputs: scorePairs(body.text_1, body.text_2),
      inputField: 'text_2',
      ...vllmTruncation(body.truncate_prompt_tokens),
      ...vllmPriority(body.priority),
    },
    'score',
  );
  ctx.body = {
    id,
    object: 'list',
    created: created(),
    model,
    data: result.outputs.map((v, index) => ({ index, object: 'score', score: v[0] })),
    usage: usage(result.promptTokens),
  };
}

const documentSchema = {
  anyOf: [
    { type: 'string' },
    { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
  ],
};

const rerankSchema = {
  type: 'object',
  required: ['query', 'documents'],
  properties: {
    model: nullable({ type: 'string' }),
    query: { type: 'string' },
    documents: { type: 'array', items: documentSchema },
    top_n: nullable({ type: 'integer', minimum: 0 }),
    return_documents: nullable({ type: 'boolean' }),
    truncate_prompt_tokens: vllmTruncationSchema,
    priority: vllmPrioritySchema,
    max_tokens_per_doc: nullable({ type: 'integer', minimum: 1 }),
  },
};
interface RerankBody {
  model?: string | null;
  query: string;
  documents: (string | { text: string })[];
  top_n?: number | null;
  return_documents?: boolean | null;
  truncate_prompt_tokens?: number | null;
  priority?: number | null;
  max_tokens_per_doc?: number | null;
}
const validateRerank = compileSchema<RerankBody>(rerankSchema);

/**
 * A rerank in the Jina / Cohere shape (vLLM's /rerank, /v1/rerank, /v2/rerank, llama.cpp's
 * /reranking): results best first, `top_n` of them (0 or absent: all), each with its document
 * unless return_documents is false. `meta` on /v2 (Cohere's v2 responses carry it).
 */
export async function handleRerank(
  gw: GatewayContext,
  ctx: Context,
  raw: unknown,
  cohereMeta: boolean,
): Promise<void> {
  const body = validateRerank(raw);
  const texts = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
  const truncate =
    body.max_tokens_per_doc != null
      ? { truncate: { direction: 'right' as const, maxTokens: body.max_tokens_per_doc } }
      : vllmTruncation(body.truncate_prompt_tokens);
  const { id, model, result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'score',
      inputs: texts.map((d) => ({ pair: [body.query, d] })),
      inputField: 'documents',
      ...truncate,
      ...vllmPriority(body.priority),
    },
    'rerank',
  );
  const ranked = result.outputs
    .map((v, index) => ({ index, relevance_score: v[0]! }))
    .sort((a, b) => b.relevance_score - a.relevance_score);
  const topN = body.top_n ? Math.min(body.top_n, ranked.length) : ranked.length;
  const withDocs = body.return_documents ?? true;
  ctx.body = {
    id,
    model,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
    results: ranked.slice(0, topN).map((r) => ({
      index: r.index,
      ...(withDocs ? { document: { text: texts[r.index] } } : {}),
      relevance_score: r.relevance_score,
    })),
    ...(cohereMeta ? { meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } } } : {}),
  };
}

const classifySchema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: nullable({ type: 'string' }),
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    truncate_prompt_tokens: vllmTruncationSchema,
    priority: vllmPrioritySchema,
  },
};
const validateClassify = compileSchema<{
  model?: string | null;
  input: string | string[];
  truncate_prompt_tokens?: number | null;
  priority?: number | null;
}>(classifySchema);

export async function handleClassify(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateClassify(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const { id, model, result } = await runPooling(
    gw,
    ctx,
    body.model,
    {
      task: 'classify',
      inputs: textsOrTokens(body.input),
      ...vllmTruncation(body.truncate_prompt_tokens),
      ...vllmPriority(body.priority),
    },
    'classify',
  );
  const labels = result.labels ?? [];
  ctx.body = {
    id,
    object: 'list',
    created: created(),
    model,
    data: result.outputs.map((probs, index) => {
      let best = 0;
      for (let i = 1; i < probs.length; i++) if (probs[i]! > probs[best]!) best = i;
      return { index, label: labels[best] ?? String(best), probs: floats(probs), num_classes: probs.length };
    }),
    usage: usage(result.promptTokens),
  };
}
