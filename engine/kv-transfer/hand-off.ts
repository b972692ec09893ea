/**
 * A request a prefill engine hands to its decode engine (MindIE's flow), as the record the
 * HandOff RPC carries: the request itself, where its KV waits, and the tokens and seed the
 * decode engine continues from. The engine's gRPC service turns it into its message and
 * back (engine/service/hand-off-mapping.ts), so this folder needs no request mapping.
 */
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import type { GenerateRequest } from '../types.js';

export interface HandOff {
  /** The request as it arrived at the prefill engine, with its id and resolved seed. */
  readonly request: GenerateRequest;
  /** Where the KV waits: the prefill engine's address and id, and the lease. */
  readonly sourceAddress: string;
  readonly sourceEngineId: string;
  readonly leaseId: string;
  /** The prompt's tokens as the prefill engine computed them, and those it generated after them. */
  readonly promptTokenIds: readonly number[];
  readonly outputTokenIds: readonly number[];
  /** The first generated token's logprob. */
  readonly firstLogprob: number;
  readonly seed: number;
  /** Compute the prompt on the decode engine when the KV does not arrive. */
  readonly recompute: boolean;
}

/** The HandOff message of a hand-off, as the engine's gRPC service writes it. */
export type HandOffEncoder = (h: HandOff) => pb.HandOffRequest;
