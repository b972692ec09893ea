/**
 * Split prefill/decode inside one engine, as a request extension (engine/extension.ts), and
 * the engine-to-engine RPCs' side of it (the gRPC server calls those).
 *
 * Prefill side — a request with `remoteDecode`:
 *   intake admits it as usual (a plan of one token per step); after its first token
 *   (`firstToken`) MindIE's flow stops it there, its text as a whole engine would stream it;
 *   when its sequence finishes `finishing` leases the prompt's blocks (the engine keeps a
 *   reference on each, engine/kv-transfer/lease-table.ts) and, with a d-target, starts the
 *   hand-off, which `beforeFinalize` waits for before the finish event goes out. The finish
 *   event then carries `kvTransfer` (vLLM's kv_transfer_params, MindIE's handedTo).
 * Decode side — a request with `remotePrefill` (llm-d) or handed off (MindIE):
 *   once admitted, `beforeQueue` keeps it out of the scheduler while decode-pull.ts takes its
 *   locally cached prefix, pulls the rest of its KV into fresh blocks (TransferKv), keys the
 *   full blocks in the prefix cache, and queues it holding those blocks; the scheduler starts
 *   it where the KV ends. With recompute allowed, a failed pull queues it without KV instead
 *   (its prompt is computed here); a request whose `remotePrefill` names no source
 *   (`RECOMPUTE_HERE`: the coordinator's retry after its prefill engine failed) is queued that
 *   way from the start.
 */
import * as grpc from '@grpc/grpc-js';
import { EngineError, invalidArgument } from '../errors.js';
import type { KvPool } from '../kv-pool.js';
import type { ChoiceOutput } from '../choice-output.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import { fromGrpcError } from '../grpc-status.js';
import type { LiveRequest } from '../live-request.js';
import type { Sequence } from '../sequence.js';
import {
  isRecomputeHere,
  type EngineRole,
  type KvTransferParams,
  type KvTransferSpec,
  type RemotePrefill,
  type RoleState,
} from '../pd-types.js';
import type { DecodeResult, EngineStatus, FinishEvent, GenerateRequest } from '../types.js';
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import { DecodeResultsHub } from './decode-results.js';
import { LeaseTable } from './lease-table.js';
import { decodeTargetAddress, Peers } from './peers.js';
import { Roles, type RequestKind } from './roles.js';
import { pullThenEnqueue, type HandOffPart, type PullCounts } from './decode-pull.js';
import type { HandOff, HandOffEncoder } from './hand-off.js';
import { serveTransfer } from './transfer-server.js';
import type { KvStore } from '../runner.js';
import { hostPort, type KvCompat, type KvTransferCounters } from './types.js';

/** A request's part in split prefill/decode (the extension's state of it). */
export interface PdState {
  readonly kind: 'prefill' | 'decode';
  readonly spec: KvTransferSpec;
  /** The request as it arrived (a hand-off forwards it). */
  readonly request: GenerateRequest;
  /** Prefill, MindIE: stop after the first token and hand the request on. */
  handOffWanted?: boolean;
  /** Prefill: the request continues elsewhere; its finish event says where. */
  params?: KvTransferParams;
  /** Prefill, MindIE: the hand-off, which the finish event waits for. */
  handOff?: Promise<void>;
  /** Decode: the pull in progress (aborted with the request). */
  pull?: AbortController;
}

interface DisaggregationOptions {
  readonly role: EngineRole;
  /** How long leased blocks wait for their pull (vLLM's NIXL connector frees them after a timeout too). */
  readonly leaseTtlMs: number;
  /** Deadline of one pull, and of a hand-off call (MindIE's kv_trans_timeout). */
  readonly transferTimeoutMs: number;
}

export interface DisaggregationDeps {
  /** The runner's KV cache; absent (a scripted runner): no KV transfer. */
  readonly kv: KvStore | undefined;
  readonly modelFingerprint: string;
  readonly engineId: string;
  readonly blocks: KvPool;
  readonly maxSeqLen: number;
  readonly options: DisaggregationOptions;
  readonly host: ExtensionHost;
}

export class Disaggregation implements RequestExtension<PdState> {
  readonly name = 'split prefill/decode';
  readonly roles: Roles;
  readonly leases: LeaseTable;
  readonly hub: DecodeResultsHub;
  private readonly peers = new Peers();
  private address: string | undefined;
  /** How the HandOff messages this engine sends are written (the gRPC service's mapping). */
  private encode: HandOffEncoder | undefined;
  readonly compat: KvCompat | undefined;
  private readonly states = new WeakMap<LiveRequest, PdState>();
  private readonly counts: PullCounts & { transfersOut: number; bytesOut: number } = {
    transfersIn: 0,
    bytesIn: 0,
    transferMsIn: 0,
    tokensIn: 0,
    transfersOut: 0,
    bytesOut: 0,
    failures: 0,
  };

  constructor(private readonly d: DisaggregationDeps) {
    this.roles = new Roles(d.options.role);
    this.leases = new LeaseTable((blocks) => d.blocks.unhold(blocks), d.options.leaseTtlMs);
    this.hub = new DecodeResultsHub((id) => d.host.cancel(id));
    const layout = d.kv?.layout;
    this.compat = layout && {
      modelFingerprint: d.modelFingerprint,
      blockSize: layout.blockSize,
      kvDtype: layout.dtype,
      layers: layout.layers,
      kvHeads: layout.kvHeads,
      headDim: layout.headDim,
    };
  }

  /**
   * Where other engines reach this one (its gRPC listen address), once the server is bound,
   * and how the server writes the HandOff messages this engine sends (kept when left out).
   */
  setListenAddress(address: string, encode?: HandOffEncoder): void {
    // A wildcard bind is reached on this machine through loopback.
    this.address = address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
    if (encode) this.encode = encode;
  }

  // ------------------------------------------------------------------------- requests

  /** Checks the request's kv_transfer against the role; its state (undefined for a whole request). */
  check(request: GenerateRequest): PdState | undefined {
    this.checkKind(request);
    const spec = request.kvTransfer;
    if (!spec || this.isLocal(spec)) return undefined;
    return { kind: spec.kind === 'remoteDecode' ? 'prefill' : 'decode', spec, request };
  }

  /** The request's kind for the role, after checking its kv_transfer. */
  private checkKind(request: GenerateRequest): RequestKind {
    const spec = request.kvTransfer;
    if (!spec || this.isLocal(spec)) {
      this.roles.check('whole');
      return 'whole';
    }
    const n = request.params?.n ?? 1;
    if (n > 1 || (request.params?.bestOf ?? n) > 1)
      throw new EngineError(
        'UNIMPLEMENTED',
        'n or best_of above 1 is not supported with split prefill/decode',
        'n',
      );
    if (request.params?.useBeamSearch)
      throw new EngineError(
        'UNIMPLEMENTED',
        'use_beam_search is not supported with split prefill/decode',
        'use_beam_search',
      );
    if (isRecomputeHere(spec)) {
      // Its prefill engine failed before any KV was leased: this decode engine computes it all.
      this.roles.check('decode');
      return 'decode';
    }
    if (!this.d.kv)
      throw new EngineError('UNIMPLEMENTED', 'KV transfer needs the native runner', 'kv_transfer');
    // A sliding window releases a prompt's early pages while it is computed (and a model
    // with mixed layers keeps several pages per block): there would be no whole prompt of
    // one page per block to lease. Moving layer groups' pages is not built.
    if (!this.d.blocks.uniformLayers)
      throw new EngineError(
        'UNIMPLEMENTED',
        'KV transfer is not supported for models with sliding-window layers',
        'kv_transfer',
      );
    if (spec.kind === 'remoteDecode') {
      if (spec.decodeTarget !== undefined && decodeTargetAddress(spec.decodeTarget) === null)
        throw invalidArgument(
          'kv_transfer.decode_target',
          `must be HOST;PORT, HOST:PORT, [IPv6]:PORT or unix:PATH, got '${spec.decodeTarget}'`,
        );
      if (this.address === undefined)
        throw new EngineError(
          'UNAVAILABLE',
          'this engine is not served over gRPC, so no engine could pull its KV',
          'kv_transfer',
        );
      this.roles.check('prefill');
      return 'prefill';
    }
    if (spec.remoteRequestId === '') throw invalidArgument('kv_transfer.remote_request_id', 'is required');
    if (spec.remoteHost === '') throw invalidArgument('kv_transfer.remote_host', 'is required');
    const unix = spec.remoteHost.startsWith('unix:');
    if (!Number.isInteger(spec.remotePort) || spec.remotePort < (unix ? 0 : 1) || spec.remotePort > 65535)
      throw invalidArgument('kv_transfer.remote_port', `must be an integer in [${unix ? 0 : 1}, 65535]`);
    this.roles.check('decode');
    return 'decode';
  }

  /** MindIE sends a request whose d-target is this very engine as a whole request. */
  private isLocal(spec: KvTransferSpec): boolean {
    return (
      spec.kind === 'remoteDecode' &&
      spec.decodeTarget !== undefined &&
      this.address !== undefined &&
      decodeTargetAddress(spec.decodeTarget) === this.address
    );
  }

  /** A prefill-side request ends at its first token: no drafts. */
  plan(plan: RequestPlan, pd: PdState | undefined): void {
    if (pd?.kind === 'prefill') plan.multiToken = false;
  }

  admit(req: LiveRequest, _seq: Sequence, pd: PdState | undefined): void {
    if (pd) this.states.set(req, pd);
  }

  /** Decode side: the request's KV is pulled before it queues. */
  beforeQueue(req: LiveRequest, seq: Sequence): boolean {
    const pd = this.states.get(req);
    // Nothing to pull for RECOMPUTE_HERE: it queues as it is and its prompt is computed here.
    if (pd?.kind !== 'decode' || isRecomputeHere(pd.spec)) return false;
    const controller = new AbortController();
    pd.pull = controller;
    const spec = pd.spec as RemotePrefill & { handOff?: HandOffPart };
    const deps = {
      blocks: this.d.blocks,
      kv: this.d.kv!,
      compat: this.compat!,
      peers: this.peers,
      transferTimeoutMs: this.d.options.transferTimeoutMs,
      maxSeqLen: this.d.maxSeqLen,
      counts: this.counts,
      host: this.d.host,
    };
    void pullThenEnqueue(deps, req, spec, seq, controller.signal).finally(() => (pd.pull = undefined));
    return true;
  }

  /**
   * Prefill side, after a request's first token joined its choice: in MindIE's flow the
   * request stops here (unless the token already ended it) and moves to its decode engine.
   */
  firstToken(req: LiveRequest, c: ChoiceOutput): void {
    const pd = this.states.get(req);
    if (pd?.kind !== 'prefill' || pd.spec.kind !== 'remoteDecode' || pd.spec.decodeTarget === undefined)
      return;
    if (c.reason !== null || c.tokenIds.length !== 1) return;
    c.reason = 'length';
    pd.handOffWanted = true;
  }

  /** Prefill side, before a finished sequence frees its blocks: lease them if another engine continues it. */
  finishing(req: LiveRequest | undefined, seq: Sequence): void {
    const pd = req && this.states.get(req);
    if (!req || pd?.kind !== 'prefill' || pd.spec.kind !== 'remoteDecode' || seq.aborted) return;
    if (req.choices[seq.index]?.reason !== 'length' || seq.numComputed < seq.promptLen) return;
    const target = pd.spec.decodeTarget;
    if (target !== undefined && !pd.handOffWanted) return; // MindIE: it ended with its first token
    const blockSize = this.d.blocks.blockSize;
    const blocks = seq.blockTable.slice(0, Math.ceil(seq.promptLen / blockSize));
    this.d.blocks.hold(blocks);
    const outputs = seq.tokens.slice(seq.promptLen);
    const c = req.choices[seq.index];
    this.leases.add({
      id: req.id,
      blocks,
      tokens: seq.tokens.slice(0, seq.promptLen),
      firstToken: outputs[0] ?? 0,
      firstLogprob: c.cumulativeLogprob, // the first token's: it is the only one
      seed: req.params.seed,
    });
    const { host, port } = hostPort(this.address!);
    pd.params = {
      doRemotePrefill: true,
      doRemoteDecode: false,
      remoteEngineId: this.d.engineId,
      remoteBlockIds: blocks,
      remoteHost: host,
      remotePort: port,
      remoteRequestId: req.id,
    };
    if (target !== undefined) pd.handOff = this.handOff(req, pd, decodeTargetAddress(target)!, outputs, seq);
  }

  /** Prefill side: the hand-off a request's finish waits for (once), if any. */
  beforeFinalize(req: LiveRequest): Promise<void> | undefined {
    const pd = this.states.get(req);
    const wait = pd?.handOff;
    if (pd) pd.handOff = undefined;
    return wait;
  }

  /** Prefill side: where the request continues (vLLM's kv_transfer_params, MindIE's handedTo). */
  finishFields(req: LiveRequest): Pick<FinishEvent, 'kvTransfer'> | undefined {
    const params = this.states.get(req)?.params;
    return params ? { kvTransfer: params } : undefined;
  }

  private async handOff(
    req: LiveRequest,
    pd: PdState,
    target: string,
    outputs: readonly number[],
    seq: Sequence,
  ): Promise<void> {
    const original = pd.request;
    const handOff: HandOff = {
      request: {
        ...original,
        requestId: req.id,
        params: { ...original.params, seed: req.params.seed },
        kvTransfer: undefined,
      },
      sourceAddress: this.address!,
      sourceEngineId: this.d.engineId,
      leaseId: req.id,
      promptTokenIds: seq.tokens.slice(0, seq.promptLen),
      outputTokenIds: [...outputs],
      firstLogprob: req.choices[0].cumulativeLogprob,
      seed: req.params.seed,
      recompute: pd.spec.kind === 'remoteDecode' && pd.spec.recompute === true,
    };
    const client = this.peers.get(target);
    try {
      // An engine with an address was told how to write the message with it.
      const message = this.encode!(handOff);
      await new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + this.d.options.transferTimeoutMs;
        client.handOff(message, new grpc.Metadata(), { deadline }, (err) =>
          err ? reject(fromGrpcError(err)) : resolve(),
        );
      });
    } catch (e) {
      this.leases.cancel(req.id);
      const why = e instanceof Error ? e.message : String(e);
      throw new EngineError('UNAVAILABLE', `the decode engine at ${target} did not take the request: ${why}`);
    }
    pd.params = { ...pd.params!, handedTo: target };
    // Cancelled while the hand-off was on its way: the decode engine drops it too.
    if (seq.aborted) client.cancel({ requestId: req.id }, () => {});
  }

  /** A cancelled request: its pull stops, and a lease under its id goes (true if there was one). */
  cancel(id: string, req: LiveRequest | undefined): boolean {
    if (req) this.states.get(req)?.pull?.abort();
    const leased = this.leases.has(id);
    this.leases.cancel(id);
    return leased;
  }

  // ------------------------------------------------------------------------- RPCs

  /** TransferKv, served from this engine's leases. */
  serveTransfer(req: pb.TransferKvRequest): AsyncGenerator<pb.TransferKvChunk> {
    if (!this.compat || !this.d.kv)
      throw new EngineError('UNIMPLEMENTED', 'KV transfer needs the native runner');
    return serveTransfer(req, {
      compat: this.compat,
      leases: this.leases,
      kv: this.d.kv,
      served: (bytes) => (this.counts.bytesOut += bytes),
      ended: (ok) => (ok ? this.counts.transfersOut++ : this.counts.failures++),
    });
  }

  /** HandOff: admits the request (checked as `generate` would) and sends its results to the hub. */
  acceptHandOff(h: HandOff): void {
    this.hub.checkHeld();
    const { host, port } = hostPort(h.sourceAddress);
    const spec: RemotePrefill & { handOff: HandOffPart } = {
      kind: 'remotePrefill',
      remoteEngineId: h.sourceEngineId,
      remoteBlockIds: [],
      remoteHost: host,
      remotePort: port,
      remoteRequestId: h.leaseId,
      recompute: h.recompute,
      handOff: { outputs: h.outputTokenIds, firstLogprob: h.firstLogprob },
    };
    const request: GenerateRequest = {
      ...h.request,
      params: { ...h.request.params, seed: h.seed },
      kvTransfer: spec,
    };
    this.d.host.check(request);
    void this.hub.forward(request.requestId!, this.d.host.submit(request));
  }

  decodeResults(signal?: AbortSignal): AsyncIterable<DecodeResult> {
    return this.hub.subscribe(signal);
  }

  setRole(role: EngineRole): RoleState {
    this.roles.set(role, this.liveKinds());
    return this.roleState();
  }

  roleState(): RoleState {
    return this.roles.stateWith(this.liveKinds());
  }

  private liveKinds(): RequestKind[] {
    return this.d.host.liveRequests().map((r) => this.states.get(r)?.kind ?? 'whole');
  }

  counters(): KvTransferCounters {
    return { leasedBlocks: this.leases.heldBlocks, ...this.counts };
  }

  /** This engine's part of `Engine.status()`: its role and the KV it moved. */
  status(): KvStatusFields {
    const { role, status } = this.roleState();
    const c = this.counters();
    return {
      role,
      roleStatus: status,
      leasedBlocks: c.leasedBlocks,
      kvTransfersIn: c.transfersIn,
      kvBytesIn: c.bytesIn,
      kvTransferMsIn: c.transferMsIn,
      kvTokensIn: c.tokensIn,
      kvTransfersOut: c.transfersOut,
      kvBytesOut: c.bytesOut,
      kvTransferFailures: c.failures,
    };
  }

  close(): void {
    this.hub.close();
    this.leases.close();
    this.peers.close();
  }
}

/** The fields of `EngineStatus` that split prefill/decode fills. */
export type KvStatusFields = Pick<
  EngineStatus,
  | 'role'
  | 'roleStatus'
  | 'leasedBlocks'
  | 'kvTransfersIn'
  | 'kvBytesIn'
  | 'kvTransferMsIn'
  | 'kvTokensIn'
  | 'kvTransfersOut'
  | 'kvBytesOut'
  | 'kvTransferFailures'
>;
