/**
 * `prism gateway --engine ADDR[,ADDR...]`: the HTTP gateways alone, in front of engines started
 * with `prism engine`; requests are spread over the engines (fewest in flight first).
 * `prism gateway --prefill A[,A2] --decode B[,B2]`: the same gateways in front of a split
 * prefill/decode coordinator (engine/kv-transfer/coordinator.ts).
 */
import { PdCoordinator, type PdFlow } from '../engine/kv-transfer/coordinator.js';
import type { Engine } from '../engine/api.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { parseListenAddress } from '../engine/service/listen-address.js';
import { EnginePool } from '../gateways/engine-pool.js';
import {
  failoverFlagOptions,
  failoverFromFlags,
  failoverHelp,
  type FailoverFlags,
} from './failover-flags.js';
import { traceMetadata } from '../gateways/shared/tracing.js';
import {
  isUsageProblem,
  listenerHelp,
  listenerOptions,
  loadConfigs,
  parseFlags,
  serveUntilStopped,
  UsageError,
  type LoadedConfigs,
} from '../gateways/serve-loop.js';

export const help = `usage: prism gateway --engine ADDR[,ADDR...] [options]
       prism gateway --prefill ADDR[,ADDR...] --decode ADDR[,ADDR...] [options]

Runs the HTTP gateways against engines started with \`prism engine\`. Engines serving the same
model form one group; a request goes to the group of the model it names (the body's "model",
or KServe's /v2/models/{model}/...; none named: the first engine's model), and within it to
the engine with the fewest requests in flight from this gateway; an engine that is down,
draining or not answering is skipped, and a request whose engine fails before any of its
answer reached the client is sent to another engine of its group with the same seed
(--retry). So an embedding model and a generation model can share one gateway.

With --prefill and --decode, each request is split: its prompt runs on the least loaded
prefill engine, its KV moves to the least loaded decode engine (over their gRPC service),
which generates the rest; every API family, streamed or not, answers as usual.

options:
  --engine ADDRS        comma-separated engine addresses: HOST:PORT, [IPv6]:PORT or unix:PATH
  --prefill ADDRS       split prefill/decode: the prefill engines (start them with --role prefill)
  --decode ADDRS        split prefill/decode: the decode engines (--role decode)
  --pd-flow FLOW        mindie (default: the prefill engine hands the request to the decode
                        engine, whose results come over its results stream, MindIE's /dresult)
                        or llm-d (llm-d's sidecar: one token on the prefill engine, its
                        kv_transfer_params to the decode engine, which pulls the KV)
  --recompute           a decode engine computes a prompt whose KV did not arrive (MindIE's
                        is-recompute) instead of failing the request
${failoverHelp}
${listenerHelp}
  -h, --help            show this help

exit codes: 0 stopped cleanly, 1 failed to start, 2 bad arguments or config.`;

function log(line: string): void {
  process.stderr.write(`prism gateway: ${line}\n`);
}

/**
 * A client for one engine. Its channel reconnects within 2 s of a restarted engine coming
 * back (gRPC's own backoff grows to 120 s), so the health monitor sees it rejoin promptly.
 */
function engineClient(address: string): GrpcEngineClient {
  return new GrpcEngineClient(address, {
    metadata: traceMetadata,
    channelOptions: { 'grpc.initial_reconnect_backoff_ms': 200, 'grpc.max_reconnect_backoff_ms': 2000 },
  });
}

function addressList(text: string, flag: string): string[] {
  const list = text.split(',').map((a) => a.trim());
  for (const a of list) {
    try {
      parseListenAddress(a, flag);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  return list;
}

interface PdFlags {
  prefill: string[];
  decode: string[];
  flow: PdFlow;
  recompute: boolean;
}

/** The coordinator over its engines, once every engine answered and all serve one model. */
async function startCoordinator(pd: PdFlags, failover: FailoverFlags): Promise<PdCoordinator> {
  const connect = (address: string): { address: string; engine: Engine } => ({
    address,
    engine: engineClient(address),
  });
  const coordinator = new PdCoordinator({
    prefill: pd.prefill.map(connect),
    decode: pd.decode.map(connect),
    flow: pd.flow,
    recompute: pd.recompute,
    retry: failover.retry,
    health: failover.health,
    ...(failover.health.intervalMs !== undefined ? { pollMs: failover.health.intervalMs } : {}),
    log,
  });
  try {
    const infos = await coordinator.infos();
    const first = infos[0].info;
    const other = infos.find((i) => i.info.modelFingerprint !== first.modelFingerprint);
    if (other)
      throw new Error(
        `the engines serve different models: ${infos[0].address} ${first.modelName} (${first.modelFingerprint}), ` +
          `${other.address} ${other.info.modelName} (${other.info.modelFingerprint})`,
      );
    if (pd.flow === 'mindie' && !(await coordinator.ready()))
      throw new Error('a decode engine did not open its results stream');
    log(
      `split prefill/decode (${pd.flow}): prefill ${pd.prefill.join(', ')}; decode ${pd.decode.join(', ')}; ` +
        `serving ${first.modelName}`,
    );
    return coordinator;
  } catch (e) {
    await coordinator.close();
    throw e;
  }
}

export async function run(argv: string[]): Promise<number> {
  let addresses: string[];
  let pd: PdFlags | undefined;
  let failover: FailoverFlags;
  let loaded: LoadedConfigs;
  try {
    const values = parseFlags(argv, {
      ...listenerOptions,
      engine: { type: 'string' },
      prefill: { type: 'string' },
      decode: { type: 'string' },
      'pd-flow': { type: 'string' },
      recompute: { type: 'boolean' },
      ...failoverFlagOptions,
    });
    failover = failoverFromFlags(values, (m) => new UsageError(m));
    const split = values.prefill !== undefined || values.decode !== undefined;
    if (split) {
      if (values.engine !== undefined) throw new UsageError('--engine: not with --prefill/--decode');
      if (!values.prefill || !values.decode)
        throw new UsageError('--prefill and --decode: both are required for split prefill/decode');
      const flow = values['pd-flow'] ?? 'mindie';
      if (flow !== 'mindie' && flow !== 'llm-d')
        throw new UsageError(`--pd-flow: must be mindie or llm-d, got '${flow}'`);
      pd = {
        prefill: addressList(values.prefill, '--prefill'),
        decode: addressList(values.decode, '--decode'),
        flow,
        recompute: values.recompute === true,
      };
      addresses = [...pd.prefill, ...pd.decode];
    } else {
      if (values['pd-flow'] !== undefined || values.recompute !== undefined)
        throw new UsageError('--pd-flow and --recompute: only with --prefill/--decode');
      if (!values.engine) throw new UsageError('--engine: is required (e.g. --engine 127.0.0.1:50051)');
      addresses = addressList(values.engine, '--engine');
    }
    loaded = loadConfigs(values);
  } catch (e) {
    if (isUsageProblem(e) || (e instanceof Error && /listener/.test(e.message))) {
      log(`${(e as Error).message}\nRun \`prism gateway --help\` for the options.`);
      return 2;
    }
    throw e;
  }
  if (pd) {
    let coordinator: PdCoordinator;
    try {
      coordinator = await startCoordinator(pd, failover);
    } catch (e) {
      log(`cannot start the coordinator: ${(e as Error).message}`);
      return 1;
    }
    return serveUntilStopped('gateway', coordinator, loaded.gateway, () => coordinator.close(), log);
  }
  const clients = addresses.map(engineClient);
  // Engines are grouped by the model they serve: one pool per model, requests routed by `model`.
  const byModel = new Map<string, { addresses: string[]; clients: GrpcEngineClient[] }>();
  try {
    const infos = await Promise.all(clients.map((c) => c.info()));
    infos.forEach((info, i) => {
      const group = byModel.get(info.modelName) ?? { addresses: [], clients: [] };
      group.addresses.push(addresses[i]!);
      group.clients.push(clients[i]!);
      byModel.set(info.modelName, group);
    });
  } catch (e) {
    log(`an engine did not answer at ${addresses.join(', ')}: ${(e as Error).message}`);
    await Promise.all(clients.map((c) => c.close()));
    return 1;
  }
  const pools = [...byModel.values()].map(
    (g) =>
      new EnginePool(g.clients, { names: g.addresses, retry: failover.retry, health: failover.health, log }),
  );
  for (const [model, g] of byModel) log(`engines: ${g.addresses.join(', ')} serving ${model}`);
  const closeAll = async (): Promise<void> => {
    await Promise.all(pools.map((p) => p.close()));
  };
  return serveUntilStopped('gateway', pools[0]!, loaded.gateway, closeAll, log, pools.slice(1));
}
