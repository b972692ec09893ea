/**
 * vLLM's `kv_transfer_params` on /v1/completions and /v1/chat/completions (llm-d's sidecar
 * flow, engine/kv-transfer/): a prefill request carries `{"do_remote_decode": true, ...}` and
 * its answer carries the params that name the leased KV (engine id, block ids, host, port,
 * request id); the decode request carries those back with `do_remote_prefill: true` and the
 * engine pulls the KV before it generates. Both flags false (or the field null) is an ordinary
 * request, as in vLLM.
 */
import type { FinishEvent, KvTransferParams, KvTransferSpec } from '../../engine/api.js';
import { invalid } from '../shared/http-error.js';

const nullableString = { anyOf: [{ type: 'string' }, { type: 'null' }] };

export const kvTransferSchemaProperty = {
  kv_transfer_params: {
    anyOf: [
      {
        type: 'object',
        properties: {
          do_remote_decode: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
          do_remote_prefill: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
          remote_engine_id: nullableString,
          remote_block_ids: {
            anyOf: [
              { type: 'array', maxItems: 1 << 20, items: { type: 'integer', minimum: 0 } },
              { type: 'null' },
            ],
          },
          remote_host: nullableString,
          remote_port: { anyOf: [{ type: 'integer', minimum: 0, maximum: 65535 }, { type: 'null' }] },
          remote_request_id: nullableString,
          tp_size: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
        },
      },
      { type: 'null' },
    ],
  },
} as const;

export interface KvTransferBody {
  do_remote_decode?: boolean | null;
  do_remote_prefill?: boolean | null;
  remote_engine_id?: string | null;
  remote_block_ids?: number[] | null;
  remote_host?: string | null;
  remote_port?: number | null;
  remote_request_id?: string | null;
  tp_size?: number | null;
}

const F = 'kv_transfer_params';

/** The engine's kv_transfer of a request body's `kv_transfer_params` (already schema-checked). */
export function kvTransferFromBody(p: KvTransferBody | null | undefined): { kvTransfer?: KvTransferSpec } {
  if (!p) return {};
  if (p.do_remote_decode && p.do_remote_prefill)
    throw invalid(F, 'do_remote_decode and do_remote_prefill cannot both be true');
  if (p.tp_size !== undefined && p.tp_size !== null && p.tp_size !== 1)
    throw invalid(`${F}.tp_size`, 'must be 1 (Prism engines are not tensor-parallel)');
  if (p.do_remote_decode) return { kvTransfer: { kind: 'remoteDecode' } };
  if (!p.do_remote_prefill) return {};
  const need = (v: string | null | undefined, name: string): string => {
    if (typeof v !== 'string' || v === '')
      throw invalid(`${F}.${name}`, 'is required with do_remote_prefill');
    return v;
  };
  if (typeof p.remote_port !== 'number')
    throw invalid(`${F}.remote_port`, 'is required with do_remote_prefill');
  return {
    kvTransfer: {
      kind: 'remotePrefill',
      remoteEngineId: need(p.remote_engine_id, 'remote_engine_id'),
      remoteBlockIds: p.remote_block_ids ?? [],
      remoteHost: need(p.remote_host, 'remote_host'),
      remotePort: p.remote_port,
      remoteRequestId: need(p.remote_request_id, 'remote_request_id'),
    },
  };
}

function paramsBody(k: KvTransferParams): object {
  return {
    do_remote_prefill: k.doRemotePrefill,
    do_remote_decode: k.doRemoteDecode,
    remote_engine_id: k.remoteEngineId,
    remote_block_ids: k.remoteBlockIds,
    remote_host: k.remoteHost,
    remote_port: k.remotePort,
    remote_request_id: k.remoteRequestId,
    tp_size: 1,
  };
}

/** The answer's `kv_transfer_params` (vLLM puts them at its top level), when a finish has them. */
export function kvTransferResponse(finishes: readonly FinishEvent[]): { kv_transfer_params?: object } {
  const k = finishes.find((f) => f.kvTransfer)?.kvTransfer;
  return k ? { kv_transfer_params: paramsBody(k) } : {};
}
