/**
 * The body of POST /v2/models/{m}/infer as a schema: one input tensor, the outputs asked for
 * and the request's parameters. A generation model's infer (index.ts: UINT32 token ids with
 * MindIE parameters) and a pooling model's (pooling-infer.ts: texts or token ids) differ only
 * in what the tensor holds and which parameters they read; the request `id` has one bound.
 */
import { nullable } from '../shared/schema.js';

/** A request id: what stopInfer and the replies carry. */
export const ID_PATTERN = '^[a-zA-Z0-9_-]{1,256}$';

export function inferBodySchema(tensor: {
  /** The tensor's `datatype` and `data` element schemas. */
  readonly datatype: object;
  readonly data: object;
  /** The input's own `parameters` (absent: not part of this form). */
  readonly inputParameters?: object;
  /** The request's `parameters`. */
  readonly parameters: object;
}): object {
  return {
    type: 'object',
    required: ['inputs'],
    properties: {
      id: { type: 'string', pattern: ID_PATTERN },
      inputs: {
        type: 'array',
        minItems: 1,
        maxItems: 1,
        items: {
          type: 'object',
          required: ['name', 'shape', 'datatype', 'data'],
          properties: {
            name: { type: 'string' },
            shape: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'integer', minimum: 1 } },
            datatype: tensor.datatype,
            data: { type: 'array', minItems: 1, items: tensor.data },
            ...(tensor.inputParameters ? { parameters: tensor.inputParameters } : {}),
          },
        },
      },
      outputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string' },
            parameters: nullable({ type: 'object', properties: { binary_data: { type: 'boolean' } } }),
          },
        },
      },
      parameters: tensor.parameters,
    },
  };
}
