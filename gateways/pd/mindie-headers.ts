/**
 * MindIE's split prefill/decode request headers on the inference routes of every family
 * (mindie-compat.md §1.4): `req-type: prefill`, `req-id` (hex), `d-target` (the decode
 * instance: `ip[;port]`, here the decode engine's gRPC address — `HOST;PORT`, `HOST:PORT` or
 * `unix:PATH`; a bare host means port 50051, `prism engine`'s default), and the optional
 * `is-recompute` (`true`/`false`). Such a request computes its prompt and first token here and
 * moves to the decode engine, whose results the coordinator reads from its `/dresult`.
 *
 * Each family's inference route spreads `pdHeaderFields(ctx)` into the engine request it builds
 * (the way openai/kv-transfer.ts maps `kv_transfer_params`), so the spec reaches the engine as
 * part of the request, and a bad header fails in the family's own error shape with MindIE's 400.
 */
import type Koa from 'koa';
import { decodeTargetAddress, type GenerateRequest, type KvTransferSpec } from '../../engine/api.js';
import { HttpError } from '../shared/http-error.js';

/** What a request's PD headers ask for, or why they are refused. */
type PdHeaders =
  { readonly requestId: string; readonly spec: KvTransferSpec } | { readonly error: HttpError };

/** The engine's default gRPC port (`prism engine --listen`). */
const DEFAULT_ENGINE_PORT = 50051;

/** Prism's request ids are at most 256 characters (MindIE's hex ids may run to 1024). */
const REQ_ID = /^(0x)?[0-9a-fA-F]{1,254}$/;

function header(ctx: Koa.Context, name: string): string | undefined {
  const v = ctx.get(name);
  return v === '' ? undefined : v;
}

function bad(field: string, rule: string): { error: HttpError } {
  return { error: new HttpError('bad_request', `${field}: ${rule}`, field) };
}

export function parsePdHeaders(get: (name: string) => string | undefined): PdHeaders | null {
  const type = get('req-type');
  const reqId = get('req-id');
  const target = get('d-target');
  const recompute = get('is-recompute');
  if (type === undefined && reqId === undefined && target === undefined && recompute === undefined)
    return null;
  if (type !== 'prefill')
    return bad('req-type', `must be 'prefill' with req-id and d-target, got '${type ?? ''}'`);
  if (reqId === undefined || !REQ_ID.test(reqId))
    return bad('req-id', 'is required: a hexadecimal id of at most 254 digits (an optional 0x before them)');
  if (target === undefined)
    return bad('d-target', 'is required: the decode engine as HOST;PORT, HOST:PORT or unix:PATH');
  if (recompute !== undefined && recompute !== 'true' && recompute !== 'false')
    return bad('is-recompute', `must be true or false, got '${recompute}'`);
  const t = target.trim();
  const decodeTarget = t.startsWith('unix:') || /[;:]\d{1,5}$/.test(t) ? t : `${t}:${DEFAULT_ENGINE_PORT}`;
  if (decodeTargetAddress(decodeTarget) === null)
    return bad('d-target', `must be HOST, HOST;PORT, HOST:PORT, [IPv6]:PORT or unix:PATH, got '${target}'`);
  return {
    requestId: reqId,
    spec: { kind: 'remoteDecode', decodeTarget, recompute: recompute === 'true' },
  };
}

/**
 * The engine request fields the PD headers of `ctx` ask for (none without them): its id (the
 * MindIE req-id, which the coordinator reads results by) and its `kvTransfer`. Spread last, so
 * they win over the family's own. A malformed header throws MindIE's 400, naming it.
 */
export function pdHeaderFields(ctx: Koa.Context): Pick<GenerateRequest, 'requestId' | 'kvTransfer'> {
  const pd = parsePdHeaders((name) => header(ctx, name));
  if (pd === null) return {};
  if ('error' in pd) throw pd.error;
  return { requestId: pd.requestId, kvTransfer: pd.spec };
}
