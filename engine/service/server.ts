/**
 * The engine's gRPC server: each RPC of prism.engine.v1.Engine mapped onto the in-process
 * `Engine` (engine/types.ts), plus the standard grpc.health.v1.Health service and server
 * reflection (so grpcurl works without the .proto file).
 *
 * A client that cancels its call or goes away aborts the engine request (its KV blocks are
 * freed by the engine within one step). Engine errors become gRPC status codes in
 * engine/grpc-status.ts; undecodable request bytes become INVALID_ARGUMENT, never a crash.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError } from '../errors.js';
import type { Engine, GenerateEvent } from '../types.js';
import type { HandOff, HandOffEncoder } from '../kv-transfer/hand-off.js';
import { parseRole } from '../kv-transfer/roles.js';
import { handOffFromProto, handOffToProto } from './hand-off-mapping.js';
import { checkHandOff, decodeResultToProto } from './kv-transfer-mapping.js';
import { grpcTarget, parseListenAddress, removeStaleSocket } from './listen-address.js';
import {
  chatMessagesFromProto,
  eventToProto,
  finishEventToProto,
  generateRequestFromProto,
  infoToProto,
  statusToProto,
  tokenEventToProto,
} from './mapping.js';
import { ENGINE_PROTO_RELATIVE, protoRoot } from './proto-files.js';
import { chatToolsFromProto } from './tool-mapping.js';
import { toGrpcStatus } from '../grpc-status.js';
import { startRpcSpan, withSpan } from './tracing.js';

const ENGINE_SERVICE_NAME = 'prism.engine.v1.Engine';

/** Large token-id prompts must fit; grpc-js's default receive limit is 4 MiB. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** After the engine drained, how long calls still open (health watches) may linger. */
const SHUTDOWN_GRACE_MS = 2000;

/** The engine-to-engine side of split prefill/decode (engine/kv-transfer/disaggregation.ts). */
interface KvTransferService {
  serveTransfer(req: pb.TransferKvRequest): AsyncGenerator<pb.TransferKvChunk>;
  acceptHandOff(h: HandOff): void;
  /**
   * Told the bound address (what other engines dial to pull this engine's KV) and how the
   * HandOff messages it sends are written.
   */
  setListenAddress(address: string, encode?: HandOffEncoder): void;
}

export interface EngineServerOptions {
  /** `HOST:PORT` (port 0 picks a free port) or `unix:PATH`. */
  readonly listen: string;
  /** Serves TransferKv and HandOff; absent: they answer UNIMPLEMENTED. */
  readonly kvTransfer?: KvTransferService;
  /** Where to report requests that failed with a non-engine error (a bug). Default: stderr. */
  readonly log?: (line: string) => void;
}

export interface RunningEngineServer {
  /** What a client dials: `HOST:PORT` with the bound port, or `unix:PATH`. */
  readonly address: string;
  readonly server: grpc.Server;
  /**
   * Graceful stop: health turns NOT_SERVING, the engine drains (running and queued requests
   * finish, new ones get UNAVAILABLE), then the server stops and the engine closes.
   */
  shutdown(): Promise<void>;
}

/** Stands in for a request whose bytes did not decode, so the handler can answer INVALID_ARGUMENT. */
class UndecodableRequest {
  constructor(readonly reason: string) {}
}

function undecodable(r: UndecodableRequest): EngineError {
  return new EngineError(
    'INVALID_ARGUMENT',
    `request: cannot decode the protobuf message (${r.reason})`,
    'request',
  );
}

/** The generated service definition with request decoding that cannot throw inside grpc-js. */
function guardedService(): grpc.ServiceDefinition {
  const guarded: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(pb.EngineService)) {
    const decode = method.requestDeserialize as (b: Buffer) => unknown;
    guarded[name] = {
      ...(method as unknown as grpc.MethodDefinition<unknown, unknown>),
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (err) {
          return new UndecodableRequest(err instanceof Error ? err.message : String(err));
        }
      },
    };
  }
  return guarded as grpc.ServiceDefinition;
}

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/** An AbortSignal that fires when the client cancels the call or its connection drops. */
function abortOnCancel(call: AnyCall): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const onCancel = (): void =>
    controller.abort(new EngineError('CANCELLED', 'the client cancelled the call'));
  if (call.cancelled) onCancel();
  call.on('cancelled', onCancel);
  return { signal: controller.signal, done: () => call.off('cancelled', onCancel) };
}

function makeHandlers(
  engine: Engine,
  log: (line: string) => void,
  kv: KvTransferService | undefined,
): grpc.UntypedServiceImplementation {
  const report = (method: string, err: unknown): void => {
    if (!(err instanceof EngineError))
      log(`engine service: ${method} failed: ${err instanceof Error ? err.stack : String(err)}`);
  };

  /** A unary RPC: decode check, run, map errors. */
  function unary<Req, Res>(
    method: string,
    run: (req: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
  ) {
    return (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>): void => {
      const request = call.request as unknown;
      const work =
        request instanceof UndecodableRequest
          ? Promise.reject(undecodable(request))
          : run(request as Req, call);
      work.then(
        (response) => callback(null, response),
        (err: unknown) => {
          report(method, err);
          callback(toGrpcStatus(err));
        },
      );
    };
  }

  async function generate(
    req: pb.GenerateRequest,
    call: grpc.ServerUnaryCall<pb.GenerateRequest, pb.GenerateResponse>,
  ): Promise<pb.GenerateResponse> {
    const request = generateRequestFromProto(req);
    const { signal, done } = abortOnCancel(call as AnyCall);
    const span = startRpcSpan('Generate', call.metadata, request.requestId);
    const choices = new Map<number, pb.Choice>();
    const logprobs = new Map<number, pb.TokenLogprob[]>();
    let requestId = request.requestId ?? '';
    try {
      for await (const event of withSpan(span, () => engine.generate(request, signal))) {
        requestId = event.requestId;
        if (event.type === 'token') {
          const list = logprobs.get(event.index) ?? [];
          list.push(...tokenEventToProto(event).logprobs);
          logprobs.set(event.index, list);
        } else {
          span.finish(event);
          choices.set(event.index, {
            finish: finishEventToProto(event),
            logprobs: logprobs.get(event.index) ?? [],
          });
        }
      }
    } catch (err) {
      span.fail(err);
      throw err;
    } finally {
      done();
      span.end();
    }
    return { requestId, choices: [...choices.entries()].sort(([a], [b]) => a - b).map(([, c]) => c) };
  }

  function generateStream(
    call: grpc.ServerWritableStream<pb.GenerateRequest, pb.GenerateStreamResponse>,
  ): void {
    const request = call.request as unknown;
    const { signal, done } = abortOnCancel(call as AnyCall);
    const span = startRpcSpan(
      'GenerateStream',
      call.metadata,
      request instanceof UndecodableRequest ? undefined : (request as pb.GenerateRequest).requestId,
    );
    const run = async (): Promise<void> => {
      if (request instanceof UndecodableRequest) throw undecodable(request);
      const engineRequest = generateRequestFromProto(request as pb.GenerateRequest);
      const events: AsyncIterable<GenerateEvent> = withSpan(span, () =>
        engine.generate(engineRequest, signal),
      );
      for await (const event of events) {
        if (event.type === 'finish') span.finish(event);
        if (call.cancelled) break; // leaving the loop ends the engine request too
        // Respect the transport's backpressure: a slow reader must not make us buffer a whole answer.
        if (!call.write(eventToProto(event))) {
          await Promise.race([once(call, 'drain'), once(signal, 'abort')]);
        }
      }
    };
    run().then(
      () => {
        done();
        span.end();
        if (!call.cancelled) call.end();
      },
      (err: unknown) => {
        done();
        span.fail(err);
        span.end();
        report('GenerateStream', err);
        if (!call.cancelled) call.emit('error', toGrpcStatus(err));
      },
    );
  }

  /**
   * A server-streaming RPC: the messages `produce` yields, written with the transport's
   * backpressure (a slow reader holds the producer back instead of making us buffer), until
   * the client cancels (leaving the loop ends the producer too).
   */
  function serverStream<Req, Res>(
    method: string,
    produce: (req: Req, signal: AbortSignal) => AsyncIterable<Res>,
  ) {
    return (call: grpc.ServerWritableStream<Req, Res>): void => {
      const request = call.request as unknown;
      const { signal, done } = abortOnCancel(call as AnyCall);
      const run = async (): Promise<void> => {
        if (request instanceof UndecodableRequest) throw undecodable(request);
        for await (const message of produce(request as Req, signal)) {
          if (call.cancelled) break;
          if (!call.write(message)) await Promise.race([once(call, 'drain'), once(signal, 'abort')]);
        }
      };
      run().then(
        () => {
          done();
          if (!call.cancelled) call.end();
        },
        (err: unknown) => {
          done();
          report(method, err);
          if (!call.cancelled) call.emit('error', toGrpcStatus(err));
        },
      );
    };
  }

  const noKv = (): never => {
    throw new EngineError('UNIMPLEMENTED', 'this engine does not serve KV transfer');
  };

  return {
    generate: unary('Generate', generate),
    generateStream,
    transferKv: serverStream('TransferKv', (req: pb.TransferKvRequest) =>
      kv ? kv.serveTransfer(req) : noKv(),
    ),
    handOff: unary('HandOff', async (req: pb.HandOffRequest): Promise<pb.HandOffResponse> => {
      if (!kv) noKv();
      checkHandOff(req);
      kv!.acceptHandOff(handOffFromProto(req));
      return {};
    }),
    decodeResults: serverStream('DecodeResults', (_req: pb.DecodeResultsRequest, signal) =>
      mapStream(engine.decodeResults(signal), (r) => decodeResultToProto(r, eventToProto)),
    ),
    setRole: unary('SetRole', async (req: pb.SetRoleRequest): Promise<pb.SetRoleResponse> => {
      const state = await engine.setRole(parseRole(req.role));
      return { role: state.role, roleStatus: state.status };
    }),
    tokenize: unary('Tokenize', async (req: pb.TokenizeRequest): Promise<pb.TokenizeResponse> => ({
      ids: await engine.tokenize(req.text, req.addSpecialTokens),
    })),
    detokenize: unary('Detokenize', async (req: pb.DetokenizeRequest): Promise<pb.DetokenizeResponse> => {
      const { text, tokens } = await engine.detokenize(req.ids, req.skipSpecialTokens);
      return { text, tokens };
    }),
    applyChatTemplate: unary(
      'ApplyChatTemplate',
      async (req: pb.ApplyChatTemplateRequest): Promise<pb.ApplyChatTemplateResponse> => ({
        text: await engine.applyChatTemplate(
          chatMessagesFromProto(req.messages, 'messages'),
          req.addGenerationPrompt,
          chatToolsFromProto({ ...req, parallelToolCalls: undefined }),
        ),
      }),
    ),
    cancel: unary('Cancel', async (req: pb.CancelRequest): Promise<pb.CancelResponse> => {
      if (req.requestId === '')
        throw new EngineError('INVALID_ARGUMENT', 'request_id: is required', 'request_id');
      return { cancelled: await engine.cancel(req.requestId) };
    }),
    status: unary('Status', async (): Promise<pb.StatusResponse> => statusToProto(await engine.status())),
    info: unary('Info', async (): Promise<pb.InfoResponse> => infoToProto(await engine.info())),
    listModels: unary('ListModels', async (): Promise<pb.ListModelsResponse> => {
      const info = await engine.info();
      const { adapters } = await engine.listAdapters();
      return {
        models: [
          {
            id: info.modelName,
            path: info.modelPath,
            architecture: info.architecture,
            contextLength: info.contextLength,
            created: info.startedAt,
            parent: '',
          },
          ...adapters.map((a) => ({
            id: a.name,
            path: a.path,
            architecture: info.architecture,
            contextLength: info.contextLength,
            created: a.loadedAt,
            parent: info.modelName,
          })),
        ],
      };
    }),
    loadAdapter: unary('LoadAdapter', (req: pb.LoadAdapterRequest) => engine.loadAdapter(req.name, req.path)),
    unloadAdapter: unary('UnloadAdapter', (req: pb.UnloadAdapterRequest) => engine.unloadAdapter(req.name)),
    listAdapters: unary('ListAdapters', (): Promise<pb.ListAdaptersResponse> =>
      engine.listAdapters().then((l) => ({ ...l, adapters: [...l.adapters] })),
    ),
  };
}

async function* mapStream<A, B>(source: AsyncIterable<A>, f: (a: A) => B): AsyncGenerator<B> {
  for await (const a of source) yield f(a);
}

/** The package definition reflection describes: the engine service and the health service. */
function reflectionPackage(): protoLoader.PackageDefinition {
  const root = protoRoot();
  return protoLoader.loadSync([join(root, ENGINE_PROTO_RELATIVE), healthProtoPath], { includeDirs: [root] });
}

/** Starts serving `engine` on `options.listen`; resolves once the port or socket is bound. */
export async function startEngineServer(
  engine: Engine,
  options: EngineServerOptions,
): Promise<RunningEngineServer> {
  const address = parseListenAddress(options.listen);
  const log = options.log ?? ((line: string) => process.stderr.write(line + '\n'));
  if (address.kind === 'unix') await removeStaleSocket(address.path);

  const server = new grpc.Server({
    // Per-call channelz bookkeeping costs tens of microseconds a call; nothing here reads it.
    'grpc.enable_channelz': 0,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    // Ping idle connections so a peer that vanished without closing its socket (host down,
    // network cut) is noticed and its requests cancelled, instead of holding KV blocks.
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_timeout_ms': 20_000,
  });
  server.addService(guardedService(), makeHandlers(engine, log, options.kvTransfer));
  const health = new HealthImplementation({ '': 'SERVING', [ENGINE_SERVICE_NAME]: 'SERVING' });
  health.addToServer(server);
  new ReflectionService(reflectionPackage()).addToServer(server);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(grpcTarget(address), grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(new Error(`cannot listen on ${options.listen}: ${err.message}`)) : resolve(bound),
    );
  });

  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(ENGINE_SERVICE_NAME, 'NOT_SERVING');
      await engine.drain();
      // Open health Watch streams never end by themselves: give calls a moment, then force.
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => server.forceShutdown(), SHUTDOWN_GRACE_MS);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await engine.close();
    })();
    return stopping;
  };

  const bound = grpcTarget(address, port);
  options.kvTransfer?.setListenAddress(bound, handOffToProto);
  return { address: bound, server, shutdown };
}
