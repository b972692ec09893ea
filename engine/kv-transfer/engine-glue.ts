/**
 * Split prefill/decode inside one engine: what the request intake, the output processor and
 * the step loop call (each one line), so the KV-transfer logic stays in this folder.
 *
 * Prefill side — a request with `remoteDecode`:
 *   intake admits it as usual; after its first token the output processor asks
 *   `afterFirstToken` (MindIE's flow stops it there, its text as a whole engine would stream
 *   it); when its sequence finishes `finishing` leases the prompt's blocks (the engine
 *   keeps a reference on each, engine/kv-transfer/lease-table.ts) and, with a d-target,
 *   starts the hand-off, which `beforeFinalize` waits for before the finish event goes out.
 *   The finish event then carries `kvTransfer` (vLLM's kv_transfer_params, MindIE's handedTo).
 * Decode side — a request with `remotePrefill` (llm-d) or handed off (MindIE):
 *   once tokenized, `pullThenEnqueue` takes its locally cached prefix, pulls the rest of its
 *   KV into fresh blocks (TransferKv), keys the full blocks in the prefix cache, and queues it
 *   holding those blocks; the scheduler starts it where the KV ends. With recompute allowed,
 *   a failed pull queues it without KV instead (its prompt is computed here).
 */
import * as grpc from '@grpc/grpc-js';
import { EngineError, invalidArgument } from '../errors.js';
import type { BlockManager } from '../block-manager.js';
import type { ChoiceOutput } from '../choice-output.js';
import type { LiveRequest } from '../live-request.js';
import type { Sequence } from '../sequence.js';
import type { StructuredOutput } from '../structured/engine-glue.js';
import type { EngineRole, KvTransferParams, KvTransferSpec, RemotePrefill, RoleState } from '../pd-types.js';
import type { DecodeResult, EngineStatus, GenerateEvent, GenerateRequest } from '../types.js';
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import { generateRequestFromProto, generateRequestToProto } from '../service/mapping.js';
import { fromGrpcError } from '../service/status-codes.js';
import { DecodeResultsHub } from './decode-results.js';
import { LeaseTable } from './lease-table.js';
import { decodeTargetAddress, Peers } from './peers.js';
import { Roles, type RequestKind } from './roles.js';
import { pullKv, type PulledHeader } from './transfer-client.js';
import { serveTransfer } from './transfer-server.js';
import type { KvStore } from '../runner.js';
import { hostPort, remoteTarget, type KvCompat, type KvTransferCounters } from './types.js';

/** A live request's part in split prefill/decode (LiveRequest.pd). */
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
  readonly blocks: BlockManager;
  readonly structured: StructuredOutput;
  readonly maxSeqLen: number;
  readonly options: DisaggregationOptions;
  /** The live requests (their kinds decide the role status). */
  liveRequests(): readonly LiveRequest[];
  /** Checks a request as `generate` would, without admitting it (a hand-off's answer). */
  check(request: GenerateRequest): void;
  submit(request: GenerateRequest): AsyncIterable<GenerateEvent>;
  /** Hands a sequence that may run now to the step loop. */
  enqueue(seq: Sequence): void;
  /** Ends a request with an error (its stream ends with it). */
  fail(req: LiveRequest, error: EngineError): void;
  cancel(id: string): void;
}

export class Disaggregation {
  readonly roles: Roles;
  readonly leases: LeaseTable;
  readonly hub: DecodeResultsHub;
  private readonly peers = new Peers();
  private address: string | undefined;
  readonly compat: KvCompat | undefined;
  private readonly counts = {
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
    this.hub = new DecodeResultsHub((id) => d.cancel(id));
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

  /** Where other engines reach this one (its gRPC listen address); set once the server is bound. */
  setListenAddress(address: string): void {
    // A wildcard bind is reached on this machine through loopback.
    this.address = address.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
  }

  // ------------------------------------------------------------------------- requests

  /** The request's kind for the role, after checking its kv_transfer (intake's accept). */
  check(request: GenerateRequest): RequestKind {
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

  /** The state an admitted request carries (undefined for a whole request). */
  stateFor(request: GenerateRequest): PdState | undefined {
    const spec = request.kvTransfer;
    if (!spec || this.isLocal(spec)) return undefined;
    return { kind: spec.kind === 'remoteDecode' ? 'prefill' : 'decode', spec, request };
  }

  /**
   * Prefill side, after a request's first token joined its choice: in MindIE's flow the
   * request stops here (unless the token already ended it) and moves to its decode engine.
   */
  afterFirstToken(req: LiveRequest, c: ChoiceOutput): void {
    const pd = req.pd;
    if (pd?.kind !== 'prefill' || pd.spec.kind !== 'remoteDecode' || pd.spec.decodeTarget === undefined)
      return;
    if (c.reason !== null || c.tokenIds.length !== 1) return;
    c.reason = 'length';
    pd.handOffWanted = true;
  }

  /** Prefill side, before a finished sequence frees its blocks: lease them if another engine continues it. */
  finishing(req: LiveRequest | undefined, seq: Sequence): void {
    const pd = req?.pd;
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
    const wait = req.pd?.handOff;
    if (req.pd) req.pd.handOff = undefined;
    return wait;
  }

  private async handOff(
    req: LiveRequest,
    pd: PdState,
    target: string,
    outputs: readonly number[],
    seq: Sequence,
  ): Promise<void> {
    const original = pd.request;
    const request = {
      ...original,
      requestId: req.id,
      params: { ...original.params, seed: req.params.seed },
      kvTransfer: undefined,
    };
    const message: pb.HandOffRequest = {
      request: generateRequestToProto(request),
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

  /**
   * Decode side: pulls the KV the request's prompt needs (what this engine's prefix cache does
   * not hold already), then queues it. Tokens the prefill engine generated join its choice
   * first, as if sampled here (the prefill engine streamed them).
   */
  async pullThenEnqueue(req: LiveRequest, seq: Sequence): Promise<void> {
    const pd = req.pd!;
    const spec = pd.spec as RemotePrefill & { handOff?: HandOffPart };
    const source = remoteTarget(spec.remoteHost, spec.remotePort);
    const blocks = this.d.blocks;
    const cached = blocks.findCachedPrefix(seq);
    // One page per block (check() refuses other layouts): the cached blocks are their pages.
    const cachedPages = cached.blocks.map((pages) => pages[0]);
    blocks.hold(cachedPages);
    if (spec.handOff) this.prime(req, seq, spec.handOff);
    const controller = new AbortController();
    pd.pull = controller;
    let fresh: number[] = [];
    const promptLen = seq.promptLen;
    const place = (h: PulledHeader): number[] => {
      if (h.tokenIds.length !== promptLen || h.tokenIds.some((t, i) => t !== seq.tokens[i]))
        throw new EngineError(
          'GENERATION_FAILED',
          'the two engines made different prompt tokens of the request',
        );
      const got = blocks.takeLoose(h.numBlocks);
      if (!got)
        throw new EngineError(
          'RESOURCE_EXHAUSTED',
          `no room for the request's KV: ${h.numBlocks} blocks needed, ${blocks.freeBlocks} free`,
        );
      fresh = got;
      return got;
    };
    try {
      const r = await pullKv(
        this.peers.get(source),
        { leaseId: spec.remoteRequestId, firstBlock: cached.blocks.length },
        { compat: this.compat!, kv: this.d.kv! },
        place,
        { deadlineMs: this.d.options.transferTimeoutMs, signal: controller.signal, source },
      );
      this.counts.transfersIn++;
      this.counts.bytesIn += r.bytes;
      this.counts.transferMsIn += r.ms;
      this.counts.tokensIn += promptLen - cached.blocks.length * blocks.blockSize;
    } catch (e) {
      blocks.unhold([...cachedPages, ...fresh]);
      if (seq.aborted) return; // cancelled: the request has already ended
      this.counts.failures++;
      const error = e instanceof EngineError ? e : new EngineError('GENERATION_FAILED', String(e));
      const mismatch = /cannot share KV|different prompt tokens/.test(error.message);
      if (spec.recompute && !mismatch) {
        this.d.enqueue(seq); // computed here from its prompt (and prefix cache)
        return;
      }
      this.d.fail(req, error);
      return;
    } finally {
      pd.pull = undefined;
    }
    if (seq.aborted) {
      blocks.unhold([...cachedPages, ...fresh]);
      return;
    }
    // The sequence takes over the references: its table holds the local prefix, then the pulled blocks.
    seq.blockTable = [...cachedPages, ...fresh];
    seq.blockKeys = [...cached.keys];
    // A handed-off request continues after its first token; a pulled one computes its last
    // prompt token here (its logits give the first token), as vLLM's decode side does.
    seq.numComputed = spec.handOff ? promptLen : promptLen - 1;
    seq.cachedPromptTokens = Math.min(seq.numComputed, promptLen);
    blocks.registerFull(seq);
    this.d.enqueue(seq);
  }

  /** The prefill engine's tokens join the choice (and the grammar) without an event. */
  private prime(req: LiveRequest, seq: Sequence, h: HandOffPart): void {
    const c = req.choices[seq.index];
    const now = performance.now();
    h.outputs.forEach((t, i) => {
      seq.tokens.push(t);
      const atLimit = c.tokenIds.length + 1 >= req.maxNew || seq.tokens.length >= this.d.maxSeqLen;
      c.accept(t, i === 0 ? h.firstLogprob : 0, now, atLimit);
    });
    this.d.structured.afterTokens(seq, [...h.outputs]);
  }

  /** A cancelled request: its pull stops, and a lease under its id goes (true if there was one). */
  cancelled(id: string, req: LiveRequest | undefined): boolean {
    req?.pd?.pull?.abort();
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
  acceptHandOff(h: pb.HandOffRequest): void {
    this.hub.checkHeld();
    const { host, port } = hostPort(h.sourceAddress);
    const base = generateRequestFromProto(h.request!);
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
      ...base,
      params: { ...base.params, seed: h.seed },
      kvTransfer: spec,
    };
    this.d.check(request);
    void this.hub.forward(request.requestId!, this.d.submit(request));
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
    return this.d.liveRequests().map((r) => r.pd?.kind ?? 'whole');
  }

  counters(): KvTransferCounters {
    return { leasedBlocks: this.leases.heldBlocks, ...this.counts };
  }

  /** This engine's part of `Engine.status()`: its role and the KV it moved. */
  statusFields(): KvStatusFields {
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

/** A hand-off's tokens generated on the prefill engine, and the first one's logprob. */
export interface HandOffPart {
  readonly outputs: readonly number[];
  readonly firstLogprob: number;
}
