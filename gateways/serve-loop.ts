/**
 * What `prism serve` and `prism gateway` share: listener flags, the gateway config, and a
 * run loop that serves until SIGINT/SIGTERM or /stopService, then stops gracefully.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig } from '../config/load.js';
import type { ResolvedConfig } from '../config/types.js';
import type { Engine } from '../engine/api.js';
import { ApiKeyConfigError, checkKeyShape, readApiKeyFile } from './shared/auth.js';
import { resolveGatewayConfig, type GatewayConfig, type MindieConfigLike } from './config.js';
import { startGateway, type RunningGateway } from './server.js';
import { GatewayState } from './shared/gateway-context.js';
import { mediaFlagHelp, mediaFlagOptions, mediaFromFlags } from './shared/images/media-config.js';
import { initTracing, shutdownTracing } from './shared/tracing.js';

export class UsageError extends Error {}

export const listenerHelp = `  --config FILE         MindIE-style config.json (ServerConfig: addresses, ports, TLS, limits;
                        see docs/api.md); without it: plain HTTP on --host
  --host H              service address (default 127.0.0.1, or ServerConfig.ipAddress)
  --port P              service port (default 1025, or ServerConfig.port; 0 = any free port)
  --management-port P   management port (default port+1, or ServerConfig.managementPort)
  --metrics-port P      metrics port (default port+2, or ServerConfig.metricsPort)
  --api-key KEY         require this API key on the service listener (repeatable; clients
                        send \`Authorization: Bearer KEY\` or \`x-api-key: KEY\`); replaces
                        ServerConfig.apiKeys. Keys on the command line show in the process
                        list: prefer --api-key-file
  --api-key-file FILE   service API keys, one per line (# comments and blank lines skipped)
  --management-api-key KEY, --management-api-key-file FILE
                        the same for the management and metrics listeners
  --allow-all-zero-ip-listening
                        allow --host 0.0.0.0 or :: (every address of the machine, as a
                        container needs); ServerConfig.allowAllZeroIpListening
  --allow-open-management
                        start a management listener without keys on a non-loopback address
                        (refused otherwise: it loads adapters and stops the service;
                        ServerConfig.allowOpenManagement); keyless service and metrics
                        listeners there start with a warning
${mediaFlagHelp}`;

export const listenerOptions = {
  ...mediaFlagOptions,
  config: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'management-port': { type: 'string' },
  'metrics-port': { type: 'string' },
  'api-key': { type: 'string', multiple: true },
  'api-key-file': { type: 'string' },
  'management-api-key': { type: 'string', multiple: true },
  'management-api-key-file': { type: 'string' },
  'allow-all-zero-ip-listening': { type: 'boolean' },
  'allow-open-management': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

export function parseFlags<O extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function portFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535)
    throw new UsageError(`${flag}: must be a port in [0, 65535], got '${value}'`);
  return n;
}

export interface LoadedConfigs {
  readonly config: ResolvedConfig;
  readonly gateway: GatewayConfig;
}

/** `--NAME KEY` (repeatable) and `--NAME-file FILE` together; undefined when neither is given. */
function keyFlags(values: FlagValues, name: string): string[] | undefined {
  const given = values[name] as string[] | undefined;
  const file = values[`${name}-file`] as string | undefined;
  if (given === undefined && file === undefined) return undefined;
  const keys: string[] = [];
  try {
    for (const k of given ?? []) checkKeyShape(k, `--${name}`);
    keys.push(...(given ?? []));
    if (file !== undefined) keys.push(...readApiKeyFile(file, `--${name}-file`));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return keys;
}

type FlagValues = Record<string, string | string[] | boolean | undefined>;

export function loadConfigs(values: FlagValues): LoadedConfigs {
  const config = loadConfig(values.config as string | undefined);
  const overrides = {
    host: values.host as string | undefined,
    port: portFlag(values.port as string | undefined, '--port'),
    managementPort: portFlag(values['management-port'] as string | undefined, '--management-port'),
    metricsPort: portFlag(values['metrics-port'] as string | undefined, '--metrics-port'),
    apiKeys: keyFlags(values, 'api-key'),
    managementApiKeys: keyFlags(values, 'management-api-key'),
    allowOpenManagement: values['allow-open-management'] === true,
    allowAllZeroIpListening: values['allow-all-zero-ip-listening'] === true,
  };
  let gateway: GatewayConfig;
  try {
    gateway = resolveGatewayConfig(config.file as unknown as MindieConfigLike, config.source, overrides);
  } catch (e) {
    if (e instanceof ApiKeyConfigError) throw new UsageError(e.message);
    throw e;
  }
  try {
    gateway = { ...gateway, media: mediaFromFlags(values) };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return { config, gateway };
}

export function isUsageProblem(e: unknown): boolean {
  return e instanceof UsageError || e instanceof ConfigError;
}

/**
 * Starts the gateway on `engine` and serves until a signal or /stopService; then drains and
 * calls `shutdown` (which stops what the caller started). Resolves to the exit code.
 */
export async function serveUntilStopped(
  name: string,
  engine: Engine,
  gatewayConfig: GatewayConfig,
  shutdown: () => Promise<void>,
  log: (line: string) => void,
  /** Engines of other models behind the same gateway (routed by the model a request names). */
  otherModels: readonly Engine[] = [],
): Promise<number> {
  initTracing({ serviceName: `prism-${name}` });
  const state = new GatewayState();
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({ engine, config: gatewayConfig, state, otherModels });
  } catch (e) {
    log((e as Error).message);
    await shutdown();
    return 1;
  }
  for (const l of gateway.listeners) {
    log(`${l.name} listener on ${l.url}`);
    if (l.warning) log(`warning: ${l.warning}`);
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async (why: string): Promise<void> => {
      if (stopping) return;
      stopping = true;
      log(`${why}: draining (running and queued requests finish; new ones get 503)`);
      state.stopping = true;
      try {
        await Promise.all([engine, ...otherModels].map((e) => e.drain()));
        await gateway.close();
        await shutdown();
        await shutdownTracing();
        log('stopped');
        resolve(0);
      } catch (e) {
        log(`shutdown failed: ${(e as Error).message}`);
        resolve(1);
      }
    };
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (++signals > 1) {
        log(`${signal} again: exiting without waiting`);
        process.exit(1);
      }
      void stop(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    state.once('stopped', () => void stop('/stopService'));
  });
}
