/**
 * POST /v2/models/{m}/infer on a pooling model: one input tensor of texts (BYTES, shape [n] or
 * [n, 1], as Triton's clients send strings) or of token ids (an integer type, shape [n] for
 * one input or [b, n] for b inputs of n tokens) -> one FP32 output tensor `embedding` of shape
 * [b, dim] (a cross-encoder's or classifier's model: `scores`, [b, labels]; BYTES pairs are
 * not a tensor form, so only its embedding and classification are served here), JSON or binary
 * as the request asks (binary.ts).
 */
import type { Context } from 'koa';
import type { PoolingInput, PoolingTask } from '../../engine/api.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
import { runPooling } from '../shared/pooling.js';
import { compileSchema } from '../shared/schema.js';
import { binaryOutputs, readInferBody, sendInferReply } from './binary.js';
import { inferBodySchema } from './tensor-schema.js';

const INTEGER_TYPES = ['UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64'];

interface PoolingTensorBody {
  id?: string;
  inputs: { name: string; shape: number[]; datatype: string; data: (string | number)[] }[];
  outputs?: { name: string; parameters?: { binary_data?: boolean } | null }[];
  parameters?: { binary_data_output?: boolean } | null;
}

const validate = compileSchema<PoolingTensorBody>(
  inferBodySchema({
    datatype: { enum: ['BYTES', ...INTEGER_TYPES] },
    data: { type: ['string', 'integer'] },
    parameters: { type: ['object', 'null'] },
  }),
);

function inputsOf(t: PoolingTensorBody['inputs'][number]): PoolingInput[] {
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (count !== t.data.length)
    throw invalid('inputs[0].shape', `declares ${count} elements but data holds ${t.data.length}`);
  if (t.datatype === 'BYTES') {
    if (t.shape.length === 2 && t.shape[1] !== 1)
      throw invalid('inputs[0].shape', 'BYTES texts must be [n] or [n, 1]');
    return t.data.map((x, i) => {
      if (typeof x !== 'string') throw invalid(`inputs[0].data[${i}]`, 'must be a string (BYTES)');
      return { text: x };
    });
  }
  if (t.data.some((x) => typeof x !== 'number'))
    throw invalid('inputs[0].data', `must hold integers (${t.datatype})`);
  const ids = t.data as number[];
  if (t.shape.length === 1) return [{ ids }];
  const [b, n] = t.shape as [number, number];
  return Array.from({ length: b }, (_, i) => ({ ids: ids.slice(i * n, (i + 1) * n) }));
}

export async function handlePoolingInfer(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  const body = validate(await readInferBody(ctx, gw.config.maxRequestBytes));
  const tasks = gw.info.pooling?.tasks ?? [];
  const task: PoolingTask = tasks.includes('embed') ? 'embed' : 'classify';
  const inputs = inputsOf(body.inputs[0]!);
  const { id, result } = await runPooling(
    gw,
    ctx,
    model,
    { task, inputs, inputField: 'inputs[0].data' },
    'infer',
  );
  const width = result.outputs[0]?.length ?? 0;
  const data: number[] = [];
  for (const v of result.outputs) for (const x of v) data.push(x);
  const name = body.outputs?.[0]?.name ?? (task === 'embed' ? 'embedding' : 'scores');
  sendInferReply(
    ctx,
    { id: body.id ?? id, model_name: model },
    [{ name, datatype: 'FP32', shape: [result.outputs.length, width], data }],
    binaryOutputs(body),
  );
}
