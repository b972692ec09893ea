/**
 * `prism serve`: the engine and the HTTP gateways in one process. The gateways still reach the
 * engine through its gRPC API, over a private unix socket, exactly as a separate
 * `prism gateway` would — one code path for the single-box and the multi-box deployment.
 */
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { engineOptionsFromConfig, modelPathFromConfig } from '../config/engine-options.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { defaultServedModelName, loadServedEngine } from '../engine/load-engine.js';
import { formatMemoryReport } from '../engine/memory.js';
import { defaultKvEventsTopic } from '../engine/options.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer } from '../engine/service/server.js';
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
import { deviceFlagOption, deviceHelp, parseDeviceFlag } from './device-flag.js';
import { pdFlagOptions, pdFromFlags, pdHelp } from './pd-flags.js';
import { poolingFlagOptions, poolingFromFlags, poolingHelp } from './pooling-flags.js';
import { kvEventsFlagOptions, kvEventsFromFlags, kvEventsHelp } from './kv-events-flags.js';
import { speculativeFlagOptions, speculativeFromFlags, speculativeHelp } from './speculative-flags.js';
import { contextFlagOption, contextHelp, maxModelLenFromFlags } from './context-flags.js';
import { schedulingFlagOption, schedulingHelp, schedulingPolicyFromFlags } from './scheduling-flags.js';
import { mmprojFromFlags, visionFlagOptions, visionHelp } from './vision-flags.js';

export const help = `usage: prism serve [options]

Runs the engine and the HTTP gateways (OpenAI, TGI, vLLM, KServe v2, native/MindIE, management,
Prometheus metrics). The gateways talk to the engine over gRPC on a private unix socket.

options:
  --model PATH          GGUF file or Hugging Face model directory (default: the config's
                        ModelConfig[0].modelWeightPath, else SmolLM2-135M-Instruct, fetched
                        into models/ on first use)
  --model-name NAME     served model name (default: ModelConfig[0].modelName with a config
                        file, else the model file's name without .gguf)
${listenerHelp}
  --engine-socket PATH  the engine's unix socket (default: a fresh one in the temp folder);
                        split prefill/decode: the d-target (unix:PATH) other instances name
${pdHelp}
  --threads N           compute threads (default: the machine's cores)
${deviceHelp}
  --max-loras N         LoRA adapters resident at once; with --max-lora-rank turns on loading
                        adapters at run time (POST /v1/load_lora_adapter, management listener)
  --max-lora-rank R     largest rank of a loadable adapter (ModelDeployConfig.maxLoraRank)
${kvEventsHelp}
${contextHelp}
${schedulingHelp}
${speculativeHelp}
${poolingHelp}
${visionHelp}
  -h, --help            show this help

Stops gracefully on SIGINT/SIGTERM or GET /stopService (management listener): new requests get
503, running and queued ones finish, then it exits 0.
Tracing: OpenTelemetry spans are exported (OTLP/HTTP) when OTEL_EXPORTER_OTLP_ENDPOINT is set.

exit codes: 0 stopped cleanly, 1 failed to start, 2 bad arguments or config.`;

function log(line: string): void {
  process.stderr.write(`prism serve: ${line}\n`);
}

/** The flags `prism serve` takes (deploy/'s manifests are checked against them). */
export const serveOptions = {
  ...listenerOptions,
  model: { type: 'string' },
  'model-name': { type: 'string' },
  'engine-socket': { type: 'string' },
  threads: { type: 'string' },
  ...deviceFlagOption,
  'max-loras': { type: 'string' },
  'max-lora-rank': { type: 'string' },
  ...kvEventsFlagOptions,
  ...speculativeFlagOptions,
  ...contextFlagOption,
  ...schedulingFlagOption,
  ...pdFlagOptions,
  ...poolingFlagOptions,
  ...visionFlagOptions,
} as const;

/** A served name that fits every family's URL rules: the file name without `.gguf`. */
export async function run(argv: string[]): Promise<number> {
  let values;
  let loaded: LoadedConfigs;
  let threads: number | undefined;
  try {
    values = parseFlags(argv, serveOptions);
    for (const [flag, max] of [
      ['max-loras', 1024],
      ['max-lora-rank', 65536],
    ] as const) {
      const v = values[flag];
      if (v !== undefined && (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max)) {
        throw new UsageError(`--${flag}: must be an integer in [1, ${max}], got '${v}'`);
      }
    }
    if ((values['max-loras'] === undefined) !== (values['max-lora-rank'] === undefined)) {
      throw new UsageError(
        '--max-loras and --max-lora-rank go together (both turn on run-time adapter loading)',
      );
    }
    if (values.threads !== undefined) {
      threads = Number(values.threads);
      if (!/^\d+$/.test(values.threads) || threads < 1 || threads > 1024) {
        throw new UsageError(`--threads: must be an integer in [1, 1024], got '${values.threads}'`);
      }
    }
    if (values.model === '') throw new UsageError('--model: must not be empty');
    const deviceFlag = parseDeviceFlag(values.device, values['cuda-kernels']);
    if (deviceFlag.error) throw new UsageError(deviceFlag.error);
    loaded = loadConfigs(values);
  } catch (e) {
    if (isUsageProblem(e) || (e instanceof Error && /listener/.test(e.message))) {
      log(`${(e as Error).message}\nRun \`prism serve --help\` for the options.`);
      return 2;
    }
    throw e;
  }
  for (const w of loaded.config.warnings) log(`config: ${w}`);
  const modelPath = values.model ?? modelPathFromConfig(loaded.config) ?? ensureDefaultModel(log);
  let options;
  try {
    options = engineOptionsFromConfig(loaded.config);
  } catch (e) {
    log((e as Error).message);
    return 2;
  }
  const modelName = values['model-name'] ?? options.modelName ?? defaultServedModelName(modelPath);
  let kvEvents;
  try {
    // llm-d's scorer names pods address:port, so the default topic carries the service port.
    const pod = `${process.env.POD_IP || hostname()}:${loaded.gateway.service.port}`;
    kvEvents = kvEventsFromFlags(
      values,
      options.kvEvents,
      () => defaultKvEventsTopic(modelName, pod),
      (m) => new UsageError(m),
    );
  } catch (e) {
    log(`${(e as Error).message}\nRun \`prism serve --help\` for the options.`);
    return 2;
  }
  let speculative;
  let pd;
  let pooling;
  try {
    options = {
      ...options,
      ...maxModelLenFromFlags(values, options, (m) => new UsageError(m)),
      ...schedulingPolicyFromFlags(values, (m) => new UsageError(m)),
      ...mmprojFromFlags(values, (m) => new UsageError(m)),
    };
    speculative = speculativeFromFlags(values, options.speculative, (m) => new UsageError(m));
    pd = pdFromFlags(values, (m) => new UsageError(m));
    pooling = poolingFromFlags(values, (m) => new UsageError(m));
  } catch (e) {
    log(`${(e as Error).message}\nRun \`prism serve --help\` for the options.`);
    return 2;
  }
  let engine, kvTransfer;
  const slow = setTimeout(() => log(`loading ${modelPath} ...`), 2000);
  try {
    ({ engine, kvTransfer } = await loadServedEngine(
      modelPath,
      {
        ...options,
        ...pd,
        ...(pooling ? { pooling } : {}),
        modelName,
        kvEvents,
        ...(speculative ? { speculative } : {}),
        ...(threads !== undefined ? { threads } : {}),
        ...(values.device !== undefined ? { device: values.device } : {}),
        ...(values['cuda-kernels'] !== undefined ? { cudaKernels: values['cuda-kernels'] } : {}),
        ...(values['max-loras'] !== undefined
          ? {
              lora: {
                modules: options.lora?.modules ?? [],
                maxLoras: Number(values['max-loras']),
                maxLoraRank: Number(values['max-lora-rank']),
              },
            }
          : {}),
      },
      { onMemory: (r) => log(formatMemoryReport(r)) },
    ));
  } catch (e) {
    log(`cannot load ${modelPath}: ${(e as Error).message}`);
    return 1;
  } finally {
    clearTimeout(slow);
  }
  const socket = values['engine-socket'] ?? join(tmpdir(), `prism-engine-${process.pid}.sock`);
  let server;
  try {
    server = await startEngineServer(engine, {
      listen: `unix:${socket}`,
      log,
      ...(kvTransfer ? { kvTransfer } : {}),
    });
  } catch (e) {
    log((e as Error).message);
    await engine.close();
    return 1;
  }
  const client = new GrpcEngineClient(server.address, { metadata: traceMetadata });
  const info = await engine.info();
  log(`engine: ${modelName} (${modelPath}) on ${info.device} (${info.deviceName}), ${server.address}`);
  const running = server;
  return serveUntilStopped(
    'serve',
    client,
    loaded.gateway,
    async () => {
      await client.close();
      await running.shutdown();
    },
    log,
  );
}
