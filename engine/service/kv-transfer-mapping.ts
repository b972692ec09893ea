/**
 * The split prefill/decode records (engine/pd-types.ts) ⇄ their gRPC messages, both
 * directions, beside mapping.ts. Shapes only; the engine checks what they ask for.
 */
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError, invalidArgument, type EngineErrorCode } from '../errors.js';
import type { KvTransferParams, KvTransferSpec } from '../pd-types.js';
import type { DecodeResult, GenerateEvent } from '../types.js';

export function kvTransferToProto(s: KvTransferSpec): pb.KvTransfer {
  if (s.kind === 'remoteDecode')
    return {
      mode: {
        $case: 'remoteDecode',
        remoteDecode: { decodeTarget: s.decodeTarget ?? '', recompute: s.recompute ?? false },
      },
    };
  return {
    mode: {
      $case: 'remotePrefill',
      remotePrefill: {
        remoteEngineId: s.remoteEngineId,
        remoteBlockIds: [...s.remoteBlockIds],
        remoteHost: s.remoteHost,
        remotePort: s.remotePort,
        remoteRequestId: s.remoteRequestId,
        recompute: s.recompute ?? false,
      },
    },
  };
}

export function kvTransferFromProto(t: pb.KvTransfer | undefined): KvTransferSpec | undefined {
  switch (t?.mode?.$case) {
    case undefined:
      return undefined;
    case 'remoteDecode': {
      const d = t.mode.remoteDecode;
      return {
        kind: 'remoteDecode',
        ...(d.decodeTarget !== '' ? { decodeTarget: d.decodeTarget } : {}),
        recompute: d.recompute,
      };
    }
    case 'remotePrefill': {
      const p = t.mode.remotePrefill;
      return { kind: 'remotePrefill', ...p };
    }
  }
}

export function kvParamsToProto(p: KvTransferParams): pb.KvTransferParams {
  return { ...p, remoteBlockIds: [...p.remoteBlockIds], handedTo: p.handedTo ?? '' };
}

export function kvParamsFromProto(p: pb.KvTransferParams | undefined): KvTransferParams | undefined {
  if (!p) return undefined;
  const { handedTo, ...rest } = p;
  return { ...rest, ...(handedTo !== '' ? { handedTo } : {}) };
}

const ERROR_CODES: ReadonlySet<string> = new Set<EngineErrorCode>([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'RESOURCE_EXHAUSTED',
  'UNAVAILABLE',
  'CANCELLED',
  'GENERATION_FAILED',
  'INTERNAL',
  'UNIMPLEMENTED',
]);

export function decodeResultToProto(
  r: DecodeResult,
  event: (e: GenerateEvent) => pb.GenerateStreamResponse,
): pb.DecodeResult {
  if ('held' in r) return { requestId: '', body: undefined };
  if ('error' in r)
    return {
      requestId: r.requestId,
      body: { $case: 'error', error: { code: r.error.code, message: r.error.message } },
    };
  const m = event(r.event).event!;
  return {
    requestId: r.requestId,
    body: m.$case === 'token' ? { $case: 'token', token: m.token } : { $case: 'finish', finish: m.finish },
  };
}

export function decodeResultFromProto(
  m: pb.DecodeResult,
  event: (e: pb.GenerateStreamResponse) => GenerateEvent | undefined,
): DecodeResult | undefined {
  const body = m.body;
  if (!body) return m.requestId === '' ? { requestId: '', held: true } : undefined;
  if (body.$case === 'error') {
    const code = ERROR_CODES.has(body.error.code)
      ? (body.error.code as EngineErrorCode)
      : 'GENERATION_FAILED';
    return { requestId: m.requestId, error: new EngineError(code, body.error.message) };
  }
  const ev = event(
    body.$case === 'token'
      ? { event: { $case: 'token', token: body.token } }
      : { event: { $case: 'finish', finish: body.finish } },
  );
  return ev ? { requestId: m.requestId, event: ev } : undefined;
}

/** A hand-off's fields, checked for shape. */
export function checkHandOff(h: pb.HandOffRequest): void {
  if (!h.request) throw invalidArgument('request', 'is required');
  if (h.request.requestId === '') throw invalidArgument('request.request_id', 'is required for a hand-off');
  if (h.sourceAddress === '') throw invalidArgument('source_address', 'is required');
  if (h.leaseId === '') throw invalidArgument('lease_id', 'is required');
  if (h.promptTokenIds.length === 0) throw invalidArgument('prompt_token_ids', 'must not be empty');
  if (h.outputTokenIds.length === 0) throw invalidArgument('output_token_ids', 'must not be empty');
}
