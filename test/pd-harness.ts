/**
 * Split prefill/decode test setups: engines on the default model (small KV pools, one thread
 * each) behind their real gRPC servers, with roles; a TCP proxy that can stall or cut a
 * transfer at a chosen byte (a peer dying mid-transfer, deterministically); the coordinator
 * behind the real gateways; and a waiter for "every KV block is free again".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { PdCoordinator, type PdFlow } from '../engine/kv-transfer/coordinator.js';
import type { EngineRole } from '../engine/pd-types.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer, type RunningEngineServer } from '../engine/service/server.js';
import type { Engine } from '../engine/types.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME } from './gateways-harness.js';

const PD_ENGINE_OPTIONS: EngineOptions = {
  modelName: MODEL_NAME,
  maxSeqLen: 1024,
  maxInputTokenLen: 768,
  kvCacheBytes: 48 << 20,
  maxBatchSize: 16,
  threads: 1,
  // Small blocks: a short test prompt spans several, and partial last blocks are exercised.
  cacheBlockSize: 16,
  kvLeaseMs: 30_000,
};

export interface TestEngine {
  readonly core: EngineCore;
  readonly server: RunningEngineServer;
  /** Where other engines and clients dial it. */
  readonly address: string;
  readonly client: GrpcEngineClient;
  close(): Promise<void>;
}

export async function startTestEngine(
  role: EngineRole,
  options: EngineOptions = {},
  model = ensureDefaultModel(),
  listen?: string,
): Promise<TestEngine> {
  const core = await loadEngine(model, { ...PD_ENGINE_OPTIONS, role, ...options });
  const dir = mkdtempSync(join(tmpdir(), 'prism-pd-test-'));
  const server = await startEngineServer(core, {
    listen: listen ?? `unix:${join(dir, 'engine.sock')}`,
    log: () => {},
    kvTransfer: core.features.disaggregation,
  });
  const client = new GrpcEngineClient(server.address);
  let closed = false;
  return {
    core,
    server,
    address: server.address,
    client,
    close: async () => {
      if (closed) return;
      closed = true;
      await client.close();
      server.server.forceShutdown();
      await core.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every KV block of the engine is free (none held by a sequence or a lease), within `ms`. */
export async function waitAllFree(engine: Engine, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const s = await engine.status();
    if (s.freeBlocks === s.totalBlocks && s.leasedBlocks === 0 && s.running === 0 && s.waiting === 0) return;
    if (Date.now() > until)
      throw new Error(
        `KV blocks still held: ${s.totalBlocks - s.freeBlocks} of ${s.totalBlocks} (${s.leasedBlocks} leased), ` +
          `${s.running} running, ${s.waiting} waiting`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A TCP proxy to `target` (HOST:PORT). Bytes flow both ways; `stallAfter(n)` holds the bytes
 * from the target once n of them have passed (a transfer stuck mid-way), `cut()` closes every
 * connection (the peer is gone).
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private fromTarget = 0;
  private stallAt = Infinity;
  private readonly held: (() => void)[] = [];
  address = '';

  constructor(private readonly target: string) {
    this.server = createServer((client) => {
      const i = target.lastIndexOf(':');
      const upstream = connect(Number(target.slice(i + 1)), target.slice(0, i));
      this.sockets.add(client);
      this.sockets.add(upstream);
      client.on('data', (d) => upstream.write(d));
      upstream.on('data', (d) => {
        if (this.fromTarget + d.length > this.stallAt) {
          upstream.pause();
          this.held.push(() => {
            client.write(d);
            upstream.resume();
          });
          return;
        }
        this.fromTarget += d.length;
        client.write(d);
      });
      const end = (): void => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', end);
      upstream.on('close', end);
      client.on('error', end);
      upstream.on('error', end);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const a = this.server.address();
    this.address = `127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    return this.address;
  }

  /** Bytes from the target so far. */
  get passed(): number {
    return this.fromTarget;
  }

  stallAfter(bytes: number): void {
    this.stallAt = this.fromTarget + bytes;
  }

  /** Resolves once a transfer is stalled at the mark. */
  async stalled(ms = 60_000): Promise<void> {
    const until = Date.now() + ms;
    while (this.held.length === 0) {
      if (Date.now() > until) throw new Error('the proxy never stalled');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface PdGateway {
  readonly gateway: RunningGateway;
  readonly coordinator: PdCoordinator;
  readonly url: string;
  close(): Promise<void>;
}

/** The real gateways in front of a coordinator over the given engines (own clients). */
export async function startPdGateway(
  prefill: readonly TestEngine[],
  decode: readonly TestEngine[],
  flow: PdFlow,
  recompute = false,
): Promise<PdGateway> {
  const connectAll = (list: readonly TestEngine[]) =>
    list.map((e) => ({ address: e.address, engine: new GrpcEngineClient(e.address) }));
  const coordinator = new PdCoordinator({
    prefill: connectAll(prefill),
    decode: connectAll(decode),
    flow,
    recompute,
    pollMs: 50,
  });
  if (!(await coordinator.ready())) throw new Error('a decode engine did not open its results stream');
  const gateway = await startGateway({ engine: coordinator, config: freePortConfig() });
  return {
    gateway,
    coordinator,
    url: gateway.url('service'),
    close: async () => {
      await gateway.close();
      await coordinator.close();
    },
  };
}
