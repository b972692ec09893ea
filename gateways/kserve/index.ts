/**
 * KServe v2 / Triton-style family (service listener): server and model metadata, token
 * inference on UINT32 tensors, text generate / generate_stream, and stopInfer by request id.
 * Error bodies are MindIE's `{"error", "error_type"}`.
 */
import Router from '@koa/router';
import { handlePoolingInfer } from './pooling-infer.js';
import type { Context } from 'koa';
import { basename } from 'node:path';
import type { GenerateEvent, GenerateRequest } from '../../engine/api.js';
import { parseJsonText, readJsonBody, readRawBody, utf8Text } from '../shared/body.js';
import { servedModels } from '../shared/served-models.js';
import { binaryOutputs, readInferBody, sendInferReply } from './binary.js';
import { ID_PATTERN, inferBodySchema } from './tensor-schema.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import { mindieErrorBody, mindieErrorFormat } from '../mindie/errors.js';
import { errorBoundary } from '../shared/error-boundary.js';
import { adapterFor, assertAccepting, servesModel, type GatewayContext } from '../shared/gateway-context.js';
import { HttpError, invalid } from '../shared/http-error.js';
import { compileSchema } from '../shared/schema.js';
import {
  mindieSampling,
  parametersSchema,
  requestSignal,
  withMindieConstraint,
  type MindieParameters,
} from '../shared/mindie-parameters.js';
import { streamSse } from '../shared/stream.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';

/** The base model or a loaded LoRA adapter (its id is the `{model_name}` path segment). */
async function checkModel(gw: GatewayContext, name: string): Promise<void> {
  if (!(await servesModel(gw, name)))
    throw new HttpError('not_found', `Model ${name} not found.`, 'model_name');
}

// ------------------------------------------------------------------------------ /infer

const tensorSchema = inferBodySchema({
  datatype: { const: 'UINT32' },
  data: { type: 'integer', minimum: 0, maximum: 4294967295 },
  inputParameters: parametersSchema,
  parameters: parametersSchema,
});

interface TensorBody {
  id?: string;
  inputs: {
    name: string;
    shape: number[];
    datatype: 'UINT32';
    data: number[];
    parameters?: MindieParameters | null;
  }[];
  outputs?: { name: string; parameters?: { binary_data?: boolean } | null }[];
  parameters?: (MindieParameters & { binary_data_output?: unknown }) | null;
}

const validateTensor = compileSchema<TensorBody>(tensorSchema);

async function handleInfer(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  await checkModel(gw, model);
  // A pooling model's infer takes texts or token ids and answers an embedding tensor.
  if (gw.info.pooling) return handlePoolingInfer(gw, ctx, model);
  const body = validateTensor(await readInferBody(ctx, gw.config.maxRequestBytes));
  const input = body.inputs[0];
  const shape = input.shape;
  if (shape.length === 2 && shape[0] !== 1)
    throw invalid('inputs[0].shape', 'must be [n] or [1, n] (batch size 1)');
  const n = shape[shape.length - 1];
  if (n !== input.data.length)
    throw invalid('inputs[0].shape', `declares ${n} tokens but data holds ${input.data.length}`);
  if (body.outputs && body.outputs.length !== body.inputs.length)
    throw invalid('outputs', 'must have as many entries as inputs');
  // Parameters at top level (the docs) or on the input (MindIE's code): both accepted.
  const params = body.parameters ?? input.parameters ?? {};
  assertAccepting(gw);
  const id = body.id ?? newRequestId('infer');
  const request: GenerateRequest = withMindieConstraint(
    {
      requestId: id,
      ...adapterFor(gw, model),
      prompt: { kind: 'tokens', ids: input.data },
      params: mindieSampling(params, 'parameters', false),
      ...pdHeaderFields(ctx),
    },
    params,
  );
  const answer = await collect(gw, request, requestSignal(ctx, params.timeout));
  const ids = answer.choices[0].tokenIds;
  const output = {
    name: body.outputs?.[0]?.name ?? 'output0',
    shape: [1, ids.length],
    datatype: 'UINT32',
    data: ids,
  };
  sendInferReply(ctx, { id, model_name: model }, [output], binaryOutputs(body));
}

// ------------------------------------------------------------------------------ /generate, /generate_stream

const textSchema = {
  type: 'object',
  required: ['text_input'],
  properties: {
    id: { type: 'string', pattern: ID_PATTERN },
    text_input: { type: 'string', minLength: 1 },
    parameters: parametersSchema,
  },
};

interface TextBody {
  id?: string;
  text_input: string;
  parameters?: MindieParameters | null;
}

const validateText = compileSchema<TextBody>(textSchema);

async function handleGenerate(
  gw: GatewayContext,
  ctx: Context,
  model: string,
  stream: boolean,
): Promise<void> {
  await checkModel(gw, model);
  const body = validateText(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const params = body.parameters ?? {};
  assertAccepting(gw);
  const id = body.id ?? newRequestId('gen');
  const request: GenerateRequest = withMindieConstraint(
    {
      requestId: id,
      ...adapterFor(gw, model),
      prompt: { kind: 'text', text: body.text_input },
      params: mindieSampling(params, 'parameters', stream),
      ...pdHeaderFields(ctx),
    },
    params,
  );
  const signal = requestSignal(ctx, params.timeout);
  const head = { ...(body.id ? { id: body.id } : {}), model_name: model, model_version: null };
  if (!stream) {
    const answer = await collect(gw, request, signal);
    const c = answer.choices[0];
    ctx.body = {
      ...head,
      text_output: c.text,
      ...(params.details
        ? {
            details: {
              finish_reason: c.finish.reason,
              generated_tokens: c.tokenIds.length,
              first_token_cost: c.finish.timings.ttftMs,
              decode_cost: c.finish.timings.decodeMs,
            },
          }
        : {}),
    };
    return;
  }
  let full = '';
  let generated = 0;
  await streamSse<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: mindieErrorBody,
    onEvent: (ev, sse) => {
      if (ev.type === 'token') {
        full += ev.text;
        generated += ev.tokenIds.length;
        if (ev.text === '') return;
        sse.data({
          ...head,
          text_output: gw.config.fullTextEnabled ? full : ev.text,
          ...(params.details ? { details: { generated_tokens: generated } } : {}),
        });
      } else {
        sse.data({
          ...head,
          text_output: gw.config.fullTextEnabled ? full : '',
          details: {
            finish_reason: ev.reason,
            generated_tokens: ev.tokenIds.length,
            batch_size: 1,
            queue_wait_time: ev.timings.queueMs,
          },
          prefill_time: ev.timings.prefillMs,
          decode_time: ev.timings.decodeMs,
        });
      }
    },
  });
}

// ------------------------------------------------------------------------------ /stopInfer

const validateStop = compileSchema<{ id: string }>({
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: ID_PATTERN } },
});

async function handleStopInfer(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  await checkModel(gw, model);
  const body = validateStop(await readJsonBody(ctx, gw.config.maxRequestBytes));
  if (!(await gw.engine.cancel(body.id)))
    throw new HttpError('not_found', `RequestId is ${body.id} not found.`, 'id');
  ctx.body = { id: body.id };
}

// ------------------------------------------------------------------------------ metadata

function serverMetadata(gw: GatewayContext): object {
  return {
    name: 'Prism',
    version: gw.version,
    extensions: {
      max_iter_times: gw.config.schedule.maxIterTimes,
      prefill_policy_type: gw.config.schedule.prefillPolicyType,
      decode_policy_type: gw.config.schedule.decodePolicyType,
      max_prefill_batch_size: gw.config.schedule.maxPrefillBatchSize || gw.info.maxBatchSize,
      max_prefill_tokens: gw.info.maxPrefillTokens,
    },
  };
}

function modelMetadata(gw: GatewayContext, model: string): object {
  return {
    name: model,
    platform: 'Prism',
    inputs: [{ name: 'input0', shape: [-1], datatype: 'UINT32' }],
    outputs: [{ name: 'output0', shape: [-1], datatype: 'UINT32' }],
  };
}

function modelConfig(gw: GatewayContext, model: string): object {
  const m = gw.config.model;
  return {
    model_name: model,
    input_datatype: 'UINT32',
    output_datatype: 'UINT32',
    max_seq_len: gw.info.maxSeqLen,
    npu_mem_size: m.npuMemSize === 0 ? -1 : m.npuMemSize,
    cpu_mem_size: m.cpuMemSize,
    world_size: m.worldSize,
    model_weight_path: basename(gw.info.modelPath),
    model_instance_type: m.modelInstanceType,
  };
}

// ------------------------------------------------------------------------------ repository index

const validateIndex = compileSchema<{ ready?: boolean }>({
  type: 'object',
  properties: { ready: { type: 'boolean' } },
});

/**
 * POST /v2/repository/index (Triton's model repository extension): the base model and each
 * loaded adapter, all READY (an adapter is listed once it can serve). tritonclient sends no
 * body; `{"ready": true}` filters to ready models, which is all of them.
 */
async function handleRepositoryIndex(gw: GatewayContext, ctx: Context): Promise<void> {
  const raw = await readRawBody(ctx, gw.config.maxRequestBytes);
  if (raw.length > 0) validateIndex(parseJsonText(ctx, utf8Text(raw)));
  ctx.body = (await servedModels(gw)).map((m) => ({ name: m.id, version: '1', state: 'READY', reason: '' }));
}

export function kserveRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(mindieErrorFormat);
  router.get('/v2', boundary, (ctx) => {
    ctx.body = serverMetadata(gw);
  });
  router.get('/v2/models/:model', boundary, async (ctx) => {
    await checkModel(gw, ctx.params.model);
    ctx.body = modelMetadata(gw, ctx.params.model);
  });
  router.get('/v2/models/:model/config', boundary, async (ctx) => {
    await checkModel(gw, ctx.params.model);
    ctx.body = modelConfig(gw, ctx.params.model);
  });
  router.post('/v2/models/:model/infer', boundary, (ctx) => handleInfer(gw, ctx, ctx.params.model));
  router.post('/v2/models/:model/generate', boundary, (ctx) =>
    handleGenerate(gw, ctx, ctx.params.model, false),
  );
  router.post('/v2/models/:model/generate_stream', boundary, (ctx) =>
    handleGenerate(gw, ctx, ctx.params.model, true),
  );
  router.post('/v2/repository/index', boundary, (ctx) => handleRepositoryIndex(gw, ctx));
  router.post('/v2/models/:model/stopInfer', boundary, (ctx) => handleStopInfer(gw, ctx, ctx.params.model));
  return router;
}
