/**
 * The processes a fault soak runs against, started with the real command lines: `prism
 * engine` processes on local sockets behind one `prism gateway`.
 *
 * - `single`: one engine behind the gateway (a fault is an outage: what a client sees then);
 * - `replicas:N`: N engines (`--engine A,B,…`);
 * - `pd`: a split prefill/decode pair (`--prefill A --decode B --recompute`, MindIE's flow).
 *
 * Each engine can be killed (SIGKILL) and started again on the same socket, or stopped
 * (SIGSTOP) and continued; the soak reads its status (KV blocks) over its own gRPC client and
 * its RSS and open fds from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrpcEngineClient } from '../../engine/service/client.js';
import type { EngineStatus } from '../../engine/types.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';

export type TopologySpec = { kind: 'single' } | { kind: 'replicas'; n: number } | { kind: 'pd' };

export function parseTopology(text: string): TopologySpec {
  if (text === 'single') return { kind: 'single' };
  if (text === 'pd') return { kind: 'pd' };
  const m = /^replicas:(\d+)$/.exec(text);
  if (m && Number(m[1]) >= 2 && Number(m[1]) <= 8) return { kind: 'replicas', n: Number(m[1]) };
  throw new Error(`--topology: must be single, replicas:N (N in [2, 8]) or pd, got '${text}'`);
}

export function topologyName(t: TopologySpec): string {
  return t.kind === 'replicas' ? `replicas:${t.n}` : t.kind;
}

export interface EngineProcess {
  /** `engine-1`…, or `prefill` / `decode`. */
  readonly name: string;
  readonly role: 'mixed' | 'prefill' | 'decode';
  readonly address: string;
  /** The running process's pid (a restarted engine has a new one). */
  pid(): number | undefined;
  /** Its status over the soak's own client, or null when it does not answer within `ms`. */
  status(ms?: number): Promise<EngineStatus | null>;
  /** Starts the process and waits until it answers. */
  start(): Promise<void>;
  kill(): void;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export interface Topology {
  readonly spec: TopologySpec;
  readonly url: string;
  readonly managementUrl: string;
  readonly model: string;
  readonly gateway: ServeProcess;
  readonly engines: readonly EngineProcess[];
  close(): Promise<void>;
}

export interface TopologyOptions {
  /** Compute threads per engine. */
  readonly threads: number;
  /** Extra `prism gateway` arguments (e.g. `--retry off`, health timing). */
  readonly gatewayArgs?: readonly string[];
  readonly log?: (line: string) => void;
}

function engineProcess(
  dir: string,
  name: string,
  role: EngineProcess['role'],
  threads: number,
): EngineProcess {
  const address = `unix:${join(dir, `${name}.sock`)}`;
  const client = new GrpcEngineClient(address, {
    channelOptions: { 'grpc.initial_reconnect_backoff_ms': 200, 'grpc.max_reconnect_backoff_ms': 1000 },
  });
  let child: ChildProcess | undefined;
  const alive = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const status = async (ms = 5000): Promise<EngineStatus | null> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
    try {
      return await Promise.race([client.status().catch(() => null), late]);
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    name,
    role,
    address,
    pid: () => (alive() ? child!.pid : undefined),
    status,
    async start() {
      const args = [
        '--import',
        'tsx',
        'cli/main.ts',
        'engine',
        '--listen',
        address,
        '--threads',
        String(threads),
      ];
      if (role !== 'mixed') args.push('--role', role);
      child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr!.on('data', (d: Buffer) => {
        if (err.length < 20_000) err += d.toString();
      });
      const until = Date.now() + 180_000;
      while ((await status(2000)) === null) {
        if (!alive()) throw new Error(`engine ${name} exited before answering:\n${err}`);
        if (Date.now() > until) throw new Error(`engine ${name} did not answer within 180 s:\n${err}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    kill() {
      if (alive()) child!.kill('SIGKILL');
    },
    pause() {
      if (alive()) child!.kill('SIGSTOP');
    },
    resume() {
      if (alive()) child!.kill('SIGCONT');
    },
    async close() {
      if (alive()) {
        child!.kill('SIGCONT');
        child!.kill('SIGKILL');
        await new Promise((r) => child!.once('exit', r));
      }
      await client.close();
    },
  };
}

export async function startTopology(spec: TopologySpec, o: TopologyOptions): Promise<Topology> {
  const dir = mkdtempSync(join(tmpdir(), 'prism-soak-'));
  const engines =
    spec.kind === 'pd'
      ? [
          engineProcess(dir, 'prefill', 'prefill', o.threads),
          engineProcess(dir, 'decode', 'decode', o.threads),
        ]
      : Array.from({ length: spec.kind === 'single' ? 1 : spec.n }, (_, i) =>
          engineProcess(dir, `engine-${i + 1}`, 'mixed', o.threads),
        );
  const cleanup = async (): Promise<void> => {
    await Promise.all(engines.map((e) => e.close()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(engines.map((e) => e.start()));
    o.log?.(`soak: engines up: ${engines.map((e) => `${e.name} (pid ${e.pid()})`).join(', ')}`);
    // The pair runs with MindIE's is-recompute: a decode engine whose KV pull breaks (its
    // prefill engine died mid-transfer) computes the prompt itself.
    const addresses =
      spec.kind === 'pd'
        ? ['--prefill', engines[0].address, '--decode', engines[1].address, '--recompute']
        : ['--engine', engines.map((e) => e.address).join(',')];
    const gateway = await startServeProcess([...addresses, ...(o.gatewayArgs ?? [])], 120_000, 'gateway');
    const models = (await (await fetch(`${gateway.url}/v1/models`)).json()) as { data: { id: string }[] };
    return {
      spec,
      url: gateway.url,
      managementUrl: gateway.managementUrl,
      model: models.data[0].id,
      gateway,
      engines,
      close: async () => {
        if (gateway.child.exitCode === null) await gateway.stop();
        await cleanup();
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}
