/**
 * Split prefill/decode as the engine's API carries it (ground floor: imports nothing): an
 * engine's role, how a request takes part (`GenerateRequest.kvTransfer`) and what a prefill
 * engine's finish event says about a request that continues elsewhere
 * (`FinishEvent.kvTransfer`). The flows they describe:
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
 * decode engine from the prefill engine that holds them under a lease (engine/kv-transfer/).
 */

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
interface RemoteDecode {
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
