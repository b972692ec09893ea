/**
 * `prism engine`: run the engine alone behind its gRPC API (prism.engine.v1.Engine, plus
 * grpc.health.v1 and server reflection). Loads config.json (or the defaults), builds the
 * in-process engine core, serves until SIGINT/SIGTERM, then drains and exits 0.
 */
import { parseArgs } from 'node:util';
import { engineOptionsFromConfig, modelPathFromConfig } from '../config/engine-options.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { ResolvedConfig } from '../config/types.js';
import { DEFAULT_MODEL_FILE, ensureDefaultModel } from '../engine/default-model.js';
import { defaultServedModelName, loadServedEngine } from '../engine/load-engine.js';
import { formatMemoryReport } from '../engine/memory.js';
import { parseListenAddress } from '../engine/service/listen-address.js';
import { startEngineServer } from '../engine/service/server.js';
import { traceExportConfigured } from '../engine/api.js';
import { defaultKvEventsTopic, type KvEventsOptions } from '../engine/options.js';
import { deviceFlagOption, deviceHelp, parseDeviceFlag } from './device-flag.js';
import { kvEventsFlagOptions, kvEventsFromFlags, kvEventsHelp } from './kv-events-flags.js';
import {
  speculativeFlagOptions,
  speculativeFromFlags,
  speculativeHelp,
  type SpeculativeFlags,
} from './speculative-flags.js';
import { pdFlagOptions, pdFromFlags, pdHelp } from './pd-flags.js';
import { contextFlagOption, contextHelp, maxModelLenFromFlags } from './context-flags.js';
import { poolingFlagOptions, poolingFromFlags, poolingHelp } from './pooling-flags.js';
import { mmprojFromFlags, visionFlagOptions, visionHelp } from './vision-flags.js';
import { schedulingFlagOption, schedulingHelp, schedulingPolicyFromFlags } from './scheduling-flags.js';
import type { EngineOptions } from '../engine/options.js';

export const DEFAULT_LISTEN = '127.0.0.1:50051';

export const help = `usage: prism engine [options]

Runs the engine alone and serves its gRPC API (prism.engine.v1.Engine), the standard gRPC
health service (grpc.health.v1.Health) and server reflection (for grpcurl).

options:
  --model PATH          GGUF file or Hugging Face model directory (default: the config's
                        ModelConfig[0].modelWeightPath, else SmolLM2-135M-Instruct, fetched
                        into models/ on first use)
  --config FILE         MindIE-style config.json (see config/README.md); without it the
                        defaults apply and the prefix cache is on
  --listen ADDRESS      HOST:PORT, [IPv6]:PORT or unix:PATH (default ${DEFAULT_LISTEN};
                        port 0 picks a free port)
  --threads N           compute threads (default: the machine's cores)
${deviceHelp}
${kvEventsHelp}
${contextHelp}
${schedulingHelp}
${speculativeHelp}
${pdHelp}
${poolingHelp}
${visionHelp}
  -h, --help            show this help

SIGINT or SIGTERM stops it gracefully: health turns NOT_SERVING, new requests get
UNAVAILABLE, running and queued requests finish, then it exits 0 (a second signal exits at once).

exit codes: 0 stopped cleanly, 1 failed to start, 2 bad arguments or config.`;

class UsageError extends Error {}

export interface EngineArgs {
  readonly model?: string;
  readonly config?: string;
  readonly listen: string;
  readonly threads?: number;
  /** --device, when given. */
  readonly device?: string;
  /** --cuda-kernels, when given. */
  readonly cudaKernels?: string;
  /** --kv-events-endpoint / --kv-events-topic, when given. */
  readonly kvEvents?: { 'kv-events-endpoint'?: string; 'kv-events-topic'?: string };
  /** --speculative / --num-speculative-tokens / --draft-model / --draft-layers, when given. */
  readonly speculative?: SpeculativeFlags;
  /** --role, --kv-lease-ms, --kv-transfer-timeout-ms. */
  readonly pd?: Pick<EngineOptions, 'role' | 'kvLeaseMs' | 'kvTransferTimeoutMs'>;
  /** --max-model-len, as given (checked against the config once it is read). */
  readonly maxModelLen?: string;
  /** --task, --matryoshka-dimensions. */
  readonly pooling?: EngineOptions['pooling'];
  /** --scheduling-policy, when given. */
  readonly schedulingPolicy?: EngineOptions['schedulingPolicy'];
  /** --mmproj, when given. */
  readonly mmproj?: string;
}

export function parseEngineArgs(argv: string[]): EngineArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        model: { type: 'string' },
        config: { type: 'string' },
        listen: { type: 'string' },
        threads: { type: 'string' },
        ...deviceFlagOption,
        ...kvEventsFlagOptions,
        ...speculativeFlagOptions,
        ...pdFlagOptions,
        ...contextFlagOption,
        ...poolingFlagOptions,
        ...schedulingFlagOption,
        ...visionFlagOptions,
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const listen = values.listen ?? DEFAULT_LISTEN;
  try {
    parseListenAddress(listen);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  let threads: number | undefined;
  if (values.threads !== undefined) {
    threads = Number(values.threads);
    if (!/^\d+$/.test(values.threads) || threads < 1 || threads > 1024) {
      throw new UsageError(`--threads: must be an integer in [1, 1024], got '${values.threads}'`);
    }
  }
  if (values.model === '') throw new UsageError('--model: must not be empty');
  const device = parseDeviceFlag(values.device, values['cuda-kernels']);
  if (device.error) throw new UsageError(device.error);
  const pd = pdFromFlags(values, (m) => new UsageError(m));
  const pooling = poolingFromFlags(values, (m) => new UsageError(m));
  const scheduling = schedulingPolicyFromFlags(values, (m) => new UsageError(m));
  const mmproj = mmprojFromFlags(values, (m) => new UsageError(m));
  return {
    ...mmproj,
    ...(pooling ? { pooling } : {}),
    ...scheduling,
    model: values.model,
    config: values.config,
    listen,
    ...(values.speculative !== undefined ||
    values['num-speculative-tokens'] !== undefined ||
    values['draft-model'] !== undefined ||
    values['draft-layers'] !== undefined
      ? {
          speculative: {
            speculative: values.speculative,
            'num-speculative-tokens': values['num-speculative-tokens'],
            'draft-model': values['draft-model'],
            'draft-layers': values['draft-layers'],
          },
        }
      : {}),
    ...(Object.keys(pd).length > 0 ? { pd } : {}),
    ...(values['max-model-len'] !== undefined ? { maxModelLen: values['max-model-len'] } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(device.device !== undefined ? { device: device.device } : {}),
    ...(device.cudaKernels !== undefined ? { cudaKernels: device.cudaKernels } : {}),
    ...(values['kv-events-endpoint'] !== undefined || values['kv-events-topic'] !== undefined
      ? {
          kvEvents: {
            'kv-events-endpoint': values['kv-events-endpoint'],
            'kv-events-topic': values['kv-events-topic'],
          },
        }
      : {}),
  };
}

/**
 * The engine options of `prism engine`: the config file's, with every flag given laid over
 * them (each flag reaches the engine, or its parse refused it). Throws a UsageError.
 */
export function engineOptionsFromArgs(args: EngineArgs, config: ResolvedConfig): EngineOptions {
  const fromConfig = engineOptionsFromConfig(config);
  const modelName =
    fromConfig.modelName ??
    defaultServedModelName(args.model ?? modelPathFromConfig(config) ?? DEFAULT_MODEL_FILE);
  const kvEvents: KvEventsOptions | undefined = kvEventsFromFlags(
    args.kvEvents ?? {},
    fromConfig.kvEvents,
    () => defaultKvEventsTopic(modelName),
    (m) => new UsageError(m),
  );
  const speculative = speculativeFromFlags(
    args.speculative ?? {},
    fromConfig.speculative,
    (m) => new UsageError(m),
  );
  return {
    ...fromConfig,
    ...maxModelLenFromFlags({ 'max-model-len': args.maxModelLen }, fromConfig, (m) => new UsageError(m)),
    ...(args.pd ?? {}),
    ...(args.schedulingPolicy !== undefined ? { schedulingPolicy: args.schedulingPolicy } : {}),
    kvEvents,
    ...(speculative ? { speculative } : {}),
    ...(args.pooling ? { pooling: args.pooling } : {}),
    ...(args.threads !== undefined ? { threads: args.threads } : {}),
    ...(args.mmproj !== undefined ? { mmproj: args.mmproj } : {}),
    ...(args.device !== undefined ? { device: args.device } : {}),
    ...(args.cudaKernels !== undefined ? { cudaKernels: args.cudaKernels } : {}),
  };
}

function log(line: string): void {
  process.stderr.write(`prism engine: ${line}\n`);
}

/**
 * With an OTLP endpoint set, the engine exports its own spans (RPC SERVER span, queue /
 * prefill / decode) as service `prism-engine`, and returns the flush to run at exit. Without
 * one it registers nothing — no provider, no context manager — and the SDK is never loaded.
 */
async function startTracing(): Promise<() => Promise<void>> {
  if (!traceExportConfigured()) return async () => {};
  const { initTracing, shutdownTracing } = await import('../gateways/shared/tracing.js');
  initTracing({ serviceName: 'prism-engine' });
  return shutdownTracing;
}

export async function run(argv: string[]): Promise<number> {
  let args: EngineArgs;
  let config: ResolvedConfig;
  try {
    args = parseEngineArgs(argv);
    config = loadConfig(args.config);
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) {
      log(`${e.message}\nRun \`prism engine --help\` for the options.`);
      return 2;
    }
    throw e;
  }
  for (const w of config.warnings) log(`config: ${w}`);

  let options;
  try {
    options = engineOptionsFromArgs(args, config);
  } catch (e) {
    log((e as Error).message);
    return 2;
  }
  const modelPath = args.model ?? modelPathFromConfig(config) ?? ensureDefaultModel(log);
  const stopTracing = await startTracing();

  const t0 = performance.now();
  const slow = setTimeout(() => log(`loading ${modelPath} ...`), 2000);
  let engine, kvTransfer;
  try {
    ({ engine, kvTransfer } = await loadServedEngine(modelPath, options, {
      onMemory: (r) => log(formatMemoryReport(r)),
    }));
  } catch (e) {
    log(`cannot load ${modelPath}: ${(e as Error).message}`);
    return 1;
  } finally {
    clearTimeout(slow);
  }

  let server;
  try {
    server = await startEngineServer(engine, {
      listen: args.listen,
      log,
      ...(kvTransfer ? { kvTransfer } : {}),
    });
  } catch (e) {
    log((e as Error).message);
    await engine.close();
    return 1;
  }
  const info = await engine.info();
  log(
    `serving ${info.modelName} (${info.architecture}, ${modelPath}) on ${info.device} (${info.deviceName}), ${server.address} ` +
      `[loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s; prefix cache ${info.prefixCache ? 'on' : 'off'}; ` +
      `config ${config.source ?? 'defaults'}; role ${options.role ?? 'mixed'}]`,
  );

  const running = server;
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      if (signals > 1) {
        log(`${signal} again: exiting without waiting`);
        process.exit(1);
      }
      log(`${signal}: draining (running and queued requests finish; new ones get UNAVAILABLE)`);
      running
        .shutdown()
        .then(stopTracing)
        .then(
          () => {
            log('stopped');
            process.off('SIGINT', onSignal);
            process.off('SIGTERM', onSignal);
            resolve(0);
          },
          (e: unknown) => {
            log(`shutdown failed: ${(e as Error).message}`);
            resolve(1);
          },
        );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
