/**
 * The `Engine` interface over gRPC: what the gateways (and tests) hold when the engine runs
 * in another process or behind a local socket. gRPC status codes become EngineError codes
 * (engine/grpc-status.ts), so callers cannot tell this from the in-process engine.
 *
 * `metadata` is the hook for per-call metadata, e.g. the W3C `traceparent`/`tracestate` of
 * the caller's active span, so a trace continues into the engine.
 */
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError } from '../errors.js';
import type {
  ChatRenderExtras,
  ChatMessage,
  Engine,
  EngineInfo,
  EngineStatus,
  FinishEvent,
  GenerateEvent,
  GenerateRequest,
  AdapterList,
  DecodeResult,
  TokenLogprob,
} from '../types.js';
import {
  chatMessagesToProto,
  eventFromProto,
  finishEventFromProto,
  generateRequestToProto,
  infoFromProto,
  statusFromProto,
  tokenEventFromProto,
} from './mapping.js';
import { fromGrpcError } from '../grpc-status.js';
import { decodeResultFromProto } from './kv-transfer-mapping.js';
import { chatToolsToProto } from './tool-mapping.js';
import type { EngineRole, RoleState } from '../pd-types.js';

export interface EngineClientOptions {
  /** Metadata to send with each call (e.g. `{ traceparent }`); called once per call. */
  readonly metadata?: () => Record<string, string> | undefined;
  /** Default: insecure (the engine listens on loopback or a local socket). */
  readonly credentials?: grpc.ChannelCredentials;
  readonly channelOptions?: grpc.ChannelOptions;
}

/** One finished choice of a unary Generate call. */
export interface GeneratedChoice extends FinishEvent {
  readonly logprobs: readonly TokenLogprob[];
}

export interface ModelCard {
  readonly id: string;
  readonly path: string;
  readonly architecture: string;
  readonly contextLength: number;
  readonly created: number;
}

const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class GrpcEngineClient implements Engine {
  private readonly client: pb.EngineClient;
  /** Calls in flight, so drain() can wait for them and close() can cancel them. */
  private readonly live = new Set<grpc.Call>();
  private draining = false;
  /** Open DecodeResults streams. */
  private readonly resultStreams = new Set<grpc.Call>();
  private idle: (() => void) | undefined;

  /** `address`: `HOST:PORT` or `unix:PATH`, as `prism engine --listen` takes it. */
  constructor(
    readonly address: string,
    private readonly options: EngineClientOptions = {},
  ) {
    this.client = new pb.EngineClient(address, options.credentials ?? grpc.credentials.createInsecure(), {
      // The client's per-call channelz tracing and retry buffering cost time on every call;
      // nothing reads channelz, and the engine's calls are not retried (a generate is not
      // idempotent; the gateway's pool moves on to another engine itself).
      'grpc.enable_channelz': 0,
      'grpc.enable_retries': 0,
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      ...options.channelOptions,
    });
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(this.options.metadata?.() ?? {})) md.set(k, v);
    return md;
  }

  private admit(): void {
    if (this.draining) throw new EngineError('UNAVAILABLE', 'the engine client is draining: no new requests');
  }

  private track(call: grpc.Call): () => void {
    this.live.add(call);
    return () => {
      this.live.delete(call);
      if (this.live.size === 0) this.idle?.();
    };
  }

  /** One unary call with the tracking, metadata and error mapping every RPC shares. */
  private unary<Req, Res>(
    method: (
      req: Req,
      md: grpc.Metadata,
      cb: (err: grpc.ServiceError | null, res: Res) => void,
    ) => grpc.ClientUnaryCall,
    request: Req,
  ): Promise<Res> {
    this.admit();
    return new Promise<Res>((resolve, reject) => {
      let untrack = (): void => {};
      const call = method.call(this.client, request, this.metadata(), (err, res) => {
        untrack();
        if (err) reject(fromGrpcError(err));
        else resolve(res);
      });
      untrack = this.track(call);
    });
  }

  async *generate(request: GenerateRequest, signal?: AbortSignal): AsyncGenerator<GenerateEvent> {
    this.admit();
    if (signal?.aborted) throw new EngineError('CANCELLED', 'the request was aborted before it started');
    const call = this.client.generateStream(generateRequestToProto(request), this.metadata());
    const untrack = this.track(call);
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const message of call as AsyncIterable<pb.GenerateStreamResponse>) {
        const event = eventFromProto(message);
        if (event) yield event;
      }
    } catch (err) {
      throw fromGrpcError(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Leaving early (break, return, error) cancels the server side, which cancels the engine request.
      call.cancel();
      untrack();
    }
  }

  async setRole(role: EngineRole): Promise<RoleState> {
    const res = await this.unary<pb.SetRoleRequest, pb.SetRoleResponse>(this.client.setRole, { role });
    return {
      role: res.role as EngineRole,
      status: res.roleStatus === 'RoleSwitching' ? 'RoleSwitching' : 'RoleReady',
    };
  }

  /** The engine's results stream (DecodeResults); its first result says the engine took it. */
  async *decodeResults(signal?: AbortSignal): AsyncGenerator<DecodeResult> {
    this.admit();
    if (signal?.aborted) throw new EngineError('CANCELLED', 'the request was aborted before it started');
    const call = this.client.decodeResults({}, this.metadata());
    // Held open for the engine's lifetime: drain() does not wait for it, close() ends it.
    this.resultStreams.add(call);
    const untrack = (): void => void this.resultStreams.delete(call);
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const message of call as AsyncIterable<pb.DecodeResult>) {
        const r = decodeResultFromProto(message, eventFromProto);
        if (r) yield r;
      }
    } catch (err) {
      throw fromGrpcError(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      call.cancel();
      untrack();
    }
  }

  /** The unary Generate RPC: every choice once finished, with its per-token logprobs when asked. */
  async generateAll(request: GenerateRequest): Promise<{ requestId: string; choices: GeneratedChoice[] }> {
    const res = await this.unary<pb.GenerateRequest, pb.GenerateResponse>(
      this.client.generate,
      generateRequestToProto(request),
    );
    return {
      requestId: res.requestId,
      choices: res.choices.map((c) => ({
        ...finishEventFromProto(c.finish ?? pb.FinishEvent.fromPartial({})),
        logprobs: tokenEventFromProto(pb.TokenEvent.fromPartial({ logprobs: c.logprobs })).logprobs ?? [],
      })),
    };
  }

  async cancel(requestId: string): Promise<boolean> {
    const res = await this.unary<pb.CancelRequest, pb.CancelResponse>(this.client.cancel, { requestId });
    return res.cancelled;
  }

  async tokenize(text: string, addSpecialTokens?: boolean): Promise<number[]> {
    const res = await this.unary<pb.TokenizeRequest, pb.TokenizeResponse>(this.client.tokenize, {
      text,
      addSpecialTokens,
    });
    return res.ids;
  }

  async detokenize(
    ids: readonly number[],
    skipSpecialTokens?: boolean,
  ): Promise<{ text: string; tokens: string[] }> {
    const res = await this.unary<pb.DetokenizeRequest, pb.DetokenizeResponse>(this.client.detokenize, {
      ids: [...ids],
      skipSpecialTokens,
    });
    return { text: res.text, tokens: res.tokens };
  }

  async applyChatTemplate(
    messages: readonly ChatMessage[],
    addGenerationPrompt?: boolean,
    extras: ChatRenderExtras = {},
  ): Promise<string> {
    const { parallelToolCalls: _unused, ...tools } = chatToolsToProto(extras);
    const res = await this.unary<pb.ApplyChatTemplateRequest, pb.ApplyChatTemplateResponse>(
      this.client.applyChatTemplate,
      { messages: chatMessagesToProto(messages), addGenerationPrompt, ...tools },
    );
    return res.text;
  }

  async status(): Promise<EngineStatus> {
    return statusFromProto(await this.unary<pb.StatusRequest, pb.StatusResponse>(this.client.status, {}));
  }

  async info(): Promise<EngineInfo> {
    return infoFromProto(await this.unary<pb.InfoRequest, pb.InfoResponse>(this.client.info, {}));
  }

  async loadAdapter(name: string, path: string): Promise<{ message: string; rank: number; loadMs: number }> {
    return this.unary<pb.LoadAdapterRequest, pb.LoadAdapterResponse>(this.client.loadAdapter, { name, path });
  }

  async unloadAdapter(name: string): Promise<{ message: string }> {
    return this.unary<pb.UnloadAdapterRequest, pb.UnloadAdapterResponse>(this.client.unloadAdapter, { name });
  }

  async listAdapters(): Promise<AdapterList> {
    return this.unary<pb.ListAdaptersRequest, pb.ListAdaptersResponse>(this.client.listAdapters, {});
  }

  async listModels(): Promise<ModelCard[]> {
    return (await this.unary<pb.ListModelsRequest, pb.ListModelsResponse>(this.client.listModels, {})).models;
  }

  /**
   * Drains this client, not the engine (other gateways may share it): new calls fail
   * UNAVAILABLE, and this resolves when the calls this client started have finished.
   */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.live.size === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
    });
  }

  /** Cancels this client's calls in flight and closes the channel. */
  async close(): Promise<void> {
    this.draining = true;
    for (const call of this.live) call.cancel();
    for (const call of this.resultStreams) call.cancel();
    this.client.close();
  }
}

/** A client for the engine at `address` (`HOST:PORT` or `unix:PATH`). */
export function connectEngine(address: string, options?: EngineClientOptions): GrpcEngineClient {
  return new GrpcEngineClient(address, options);
}
