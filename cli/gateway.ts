/**
 * `prism gateway --engine ADDR[,ADDR...]`: the HTTP gateways alone, in front of engines started
 * with `prism engine`; requests are spread over the engines (fewest in flight first).
 */
import { GrpcEngineClient } from '../engine/service/client.js';
import { parseListenAddress } from '../engine/service/listen-address.js';
import { EnginePool } from '../gateways/engine-pool.js';
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

Runs the HTTP gateways against engines started with \`prism engine\`. Each request goes to
the engine with the fewest requests in flight from this gateway; an engine that is down or
draining is skipped. All engines must serve the same model.

options:
  --engine ADDRS        comma-separated engine addresses: HOST:PORT, [IPv6]:PORT or unix:PATH
${listenerHelp}
  -h, --help            show this help

exit codes: 0 stopped cleanly, 1 failed to start, 2 bad arguments or config.`;

function log(line: string): void {
  process.stderr.write(`prism gateway: ${line}\n`);
}

export async function run(argv: string[]): Promise<number> {
  let addresses: string[];
  let loaded: LoadedConfigs;
  try {
    const values = parseFlags(argv, { ...listenerOptions, engine: { type: 'string' } });
    if (!values.engine) throw new UsageError('--engine: is required (e.g. --engine 127.0.0.1:50051)');
    addresses = values.engine.split(',').map((a) => a.trim());
    for (const a of addresses) {
      try {
        parseListenAddress(a, '--engine');
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
    }
    loaded = loadConfigs(values);
  } catch (e) {
    if (isUsageProblem(e) || (e instanceof Error && /listener/.test(e.message))) {
      log(`${(e as Error).message}\nRun \`prism gateway --help\` for the options.`);
      return 2;
    }
    throw e;
  }
  const clients = addresses.map((a) => new GrpcEngineClient(a, { metadata: traceMetadata }));
  const pool = new EnginePool(clients);
  try {
    const info = await pool.info();
    log(`engines: ${addresses.join(', ')} serving ${info.modelName}`);
  } catch (e) {
    log(`no engine answered at ${addresses.join(', ')}: ${(e as Error).message}`);
    await pool.close();
    return 1;
  }
  return serveUntilStopped('gateway', pool, loaded.gateway, () => pool.close(), log);
}
