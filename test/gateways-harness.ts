/**
 * Test harness for the gateway tests: the real engine (default model, small KV pool) behind
 * its real gRPC server on a unix socket, the gRPC client as the gateways' engine — the same
 * path `prism serve` takes — and the gateways on free ports (plain HTTP unless `config` says).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadServedEngine, type LoadEngineHooks } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer, type RunningEngineServer } from '../engine/service/server.js';
import type { LoraOptions } from '../engine/options.js';
import type { Engine } from '../engine/types.js';
import { defaultGatewayConfig, type GatewayConfig } from '../gateways/config.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { traceMetadata } from '../gateways/shared/tracing.js';

export const MODEL_NAME = 'smollm2-test';

export interface Harness {
  readonly gateway: RunningGateway;
  readonly client: GrpcEngineClient;
  readonly engine: Engine;
  /** Service listener URL. */
  readonly url: string;
  readonly managementUrl: string;
  readonly metricsUrl: string;
  close(): Promise<void>;
}

export function freePortConfig(overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  const base = defaultGatewayConfig('127.0.0.1', 0);
  return {
    ...base,
    management: { host: '127.0.0.1', port: 0 },
    metrics: { host: '127.0.0.1', port: 0 },
    // Tests send many bad requests on purpose: only 5xx lines reach the test output
    // (test/gateways-request-log.test.ts checks the log itself).
    requestLog: { ...base.requestLog, level: 'Error' },
    ...overrides,
  };
}

export interface HarnessOptions {
  /** Wraps the gRPC client's metadata hook (tests observe what reaches the engine). */
  readonly metadata?: () => Record<string, string>;
  /** Served model name (default MODEL_NAME). */
  readonly modelName?: string;
  /** LoRA adapters of the engine (none by default). */
  readonly lora?: LoraOptions;
  /** Engine options over the harness's (e.g. a small maxIterTimes so fuzzed requests stay short). */
  readonly engine?: EngineOptions;
  /** Hooks into the engine's loading (e.g. onContext for native fault injection). */
  readonly hooks?: LoadEngineHooks;
  /** The model file or folder (default: the default model). */
  readonly modelPath?: string;
}

export async function startHarness(
  config: GatewayConfig = freePortConfig(),
  options: HarnessOptions = {},
): Promise<Harness> {
  // A pooling model (an embedder, a reranker) gets the pooling engine, as `prism serve` gives it.
  const { engine } = await loadServedEngine(
    options.modelPath ?? ensureDefaultModel(),
    {
      modelName: options.modelName ?? MODEL_NAME,
      maxSeqLen: 1024,
      maxInputTokenLen: 768,
      kvCacheBytes: 64 << 20,
      maxBatchSize: 16,
      threads: 2,
      ...(options.lora ? { lora: options.lora } : {}),
      ...options.engine,
    },
    options.hooks,
  );
  const dir = mkdtempSync(join(tmpdir(), 'prism-gw-test-'));
  let server: RunningEngineServer | undefined;
  try {
    server = await startEngineServer(engine, { listen: `unix:${join(dir, 'engine.sock')}`, log: () => {} });
    const client = new GrpcEngineClient(server.address, { metadata: options.metadata ?? traceMetadata });
    const gateway = await startGateway({ engine: client, config });
    const running = server;
    return {
      gateway,
      client,
      engine,
      url: gateway.url('service'),
      managementUrl: gateway.url('management'),
      metricsUrl: gateway.url('metrics'),
      close: async () => {
        await gateway.close();
        await client.close();
        await running.shutdown();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (server) await server.shutdown();
    else await engine.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A parsed JSON body of any shape: the assertions themselves state what they expect of it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonBody = any;

/** The reply's text, and its JSON when it is JSON (undefined otherwise: error pages, SSE). */
async function readReply(res: Response): Promise<{ status: number; json: JsonBody; text: string }> {
  const text = await res.text();
  let json: JsonBody;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: JsonBody; text: string; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { ...(await readReply(res)), headers: res.headers };
}

export async function getJson(url: string): Promise<{ status: number; json: JsonBody; text: string }> {
  return readReply(await fetch(url));
}

/** Waits until the engine reports nothing running or waiting (or fails after `ms`). */
export async function waitIdle(engine: Engine, ms = 10000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const s = await engine.status();
    if (s.running === 0 && s.waiting === 0) return;
    if (Date.now() > until) throw new Error(`engine still busy: ${s.running} running, ${s.waiting} waiting`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const execFileAsync = promisify(execFile);

/**
 * Runs a client script of test/clients/ with the test environment's python3 and parses the one
 * JSON object it prints (the client tests' results).
 */
export async function runPythonClient(
  script: string,
  args: readonly string[],
  timeoutMs = 240000,
): Promise<JsonBody> {
  const { stdout } = await execFileAsync('python3', [`test/clients/${script}`, ...args], {
    timeout: timeoutMs,
  });
  return JSON.parse(stdout);
}
