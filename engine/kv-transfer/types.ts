/**
 * Split prefill/decode, the engine's side of it: the records a request, a finish event and the
 * engine's status carry, and the KV store a runner offers. The flows they describe:
 *
 * - MindIE (push): the coordinator sends the request to a prefill engine naming the decode
 *   engine (`remoteDecode.decodeTarget`, MindIE's d-target). The prefill engine computes the
 *   prompt and the first token, leases the prompt's KV blocks and hands the request to the
 *   decode engine, which pulls the blocks and continues; its results go to the coordinator
 *   over DecodeResults (MindIE's `GET /dresult`).
 * - llm-d (pull): the sidecar sends the prompt to a prefill engine with `remoteDecode` and no
 *   target (vLLM's `do_remote_decode`); the finish event names the leased blocks
 *   (`KvTransferParams`, vLLM's `kv_transfer_params`); the decode request carries them back
 *   (`remotePrefill`, vLLM's `do_remote_prefill`) and the decode engine pulls, then generates.
 *
 * Either way the bytes move over the engine's own gRPC service (TransferKv), pulled by the
 * decode engine from the prefill engine that holds them under a lease.
 */
import type { KvTransferLayout } from '../../native/native.js';
import type { EngineError } from '../errors.js';
import type { GenerateEvent } from '../types.js';

export type { KvTransferLayout } from '../../native/native.js';

/** What an engine takes: `mixed` (the default) runs whole requests and both halves of split ones. */
export type EngineRole = 'prefill' | 'decode' | 'mixed';
export const ENGINE_ROLES: readonly EngineRole[] = ['prefill', 'decode', 'mixed'];

/** MindIE's role status: `RoleSwitching` while requests the new role refuses still drain. */
export type RoleStatus = 'RoleReady' | 'RoleSwitching';

export interface RoleState {
  readonly role: EngineRole;
  readonly status: RoleStatus;
}

/** Compute the prompt and the first token here; the rest is decoded elsewhere. */
export interface RemoteDecode {
  readonly kind: 'remoteDecode';
  /** MindIE's d-target: the decode engine's address; absent (llm-d): lease the KV for a pull. */
  readonly decodeTarget?: string;
  /** MindIE's is-recompute: the decode engine recomputes the prompt if the KV does not arrive. */
  readonly recompute?: boolean;
}

/** The prompt's KV waits on another engine (vLLM's kv_transfer_params with do_remote_prefill). */
export interface RemotePrefill {
  readonly kind: 'remotePrefill';
  readonly remoteEngineId: string;
  readonly remoteBlockIds: readonly number[];
  /** HOST (with remotePort), or `unix:PATH` (remotePort 0). */
  readonly remoteHost: string;
  readonly remotePort: number;
  /** The lease: the prefill request's id. */
  readonly remoteRequestId: string;
  /** When the pull fails: compute the prompt here instead of failing (vLLM's kv_load_failure_policy). */
  readonly recompute?: boolean;
}

export type KvTransferSpec = RemoteDecode | RemotePrefill;

/**
 * The decode half of a request whose prefill engine failed before it leased any KV (the
 * coordinator's retry, MindIE's is-recompute on the decode side): no source to pull from, so
 * the decode engine computes the prompt itself. vLLM's connector does the same with
 * `do_remote_prefill` params that name no remote engine.
 */
export const RECOMPUTE_HERE: RemotePrefill = {
  kind: 'remotePrefill',
  remoteEngineId: '',
  remoteBlockIds: [],
  remoteHost: '',
  remotePort: 0,
  remoteRequestId: '',
  recompute: true,
};

export function isRecomputeHere(spec: KvTransferSpec): boolean {
  return (
    spec.kind === 'remotePrefill' &&
    spec.remoteHost === '' &&
    spec.remoteRequestId === '' &&
    spec.recompute === true
  );
}

/** What a prefill engine's finish event says about a request that continues elsewhere. */
export interface KvTransferParams {
  readonly doRemotePrefill: boolean;
  readonly doRemoteDecode: boolean;
  readonly remoteEngineId: string;
  readonly remoteBlockIds: readonly number[];
  readonly remoteHost: string;
  readonly remotePort: number;
  readonly remoteRequestId: string;
  /** MindIE's flow: the decode engine the request was handed to. */
  readonly handedTo?: string;
}

/** What two engines must share for KV to move between them (checked before any block moves). */
export interface KvCompat {
  readonly modelFingerprint: string;
  readonly blockSize: number;
  readonly kvDtype: string;
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/** A runner's KV cache, block by block (the native copies; engine/runner.ts). */
export interface KvStore {
  readonly layout: KvTransferLayout;
  read(block: number, layerStart: number, layerCount: number): Uint8Array;
  write(block: number, layerStart: number, data: Uint8Array): void;
}

/** Counters of the KV moved, for the status RPC and the benchmark. */
export interface KvTransferCounters {
  readonly leasedBlocks: number;
  readonly transfersIn: number;
  readonly bytesIn: number;
  readonly transferMsIn: number;
  readonly tokensIn: number;
  readonly transfersOut: number;
  readonly bytesOut: number;
  readonly failures: number;
}

/** The first differing field of two compat records, or null when they agree. */
export function compatMismatch(mine: KvCompat, theirs: KvCompat): string | null {
  const fields: (keyof KvCompat)[] = [
    'modelFingerprint',
    'blockSize',
    'kvDtype',
    'layers',
    'kvHeads',
    'headDim',
  ];
  for (const f of fields) {
    if (mine[f] !== theirs[f])
      return `${f}: this engine has ${String(mine[f])}, the other ${String(theirs[f])}`;
  }
  return null;
}

/** The gRPC target of a prefill engine named by host and port (`unix:PATH` carries port 0). */
export function remoteTarget(host: string, port: number): string {
  if (host.startsWith('unix:')) return host;
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Host and port of a listen address as kv_transfer_params carry them. */
export function hostPort(address: string): { host: string; port: number } {
  if (address.startsWith('unix:')) return { host: address, port: 0 };
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(i + 1)) };
}

/**
 * One result on a decode engine's results stream (DecodeResults, `GET /dresult`). The first of
 * every stream is `held` (request id ''): from then on this holder gets the results.
 */
export type DecodeResult =
  | { readonly requestId: string; readonly event: GenerateEvent }
  | { readonly requestId: string; readonly error: EngineError }
  | { readonly requestId: ''; readonly held: true };
