/**
 * Assembles the gateways: each family's routers mounted on the listener mindie-compat.md §1.0
 * gives it (service / management / metrics; health routes also on the service listener), one
 * Koa app per distinct address, with tracing, `/versions/{v}` rejection and a 404 fallback.
 */
import Router from '@koa/router';
import Koa from 'koa';
import type { Engine } from '../engine/api.js';
import { anthropicErrorFormat } from './anthropic/errors.js';
import { anthropicRouter } from './anthropic/index.js';
import { ollamaErrorFormat } from './ollama/errors.js';
import { ollamaRouter } from './ollama/index.js';
import type { GatewayConfig, ListenerConfig } from './config.js';
import { kserveRouter } from './kserve/index.js';
import { llamacppRouter } from './llamacpp/index.js';
import { modelDispatcher } from './model-dispatch.js';
import { healthRouter } from './management/index.js';
import { loraRouter } from './management/lora.js';
import { metricsRouter, mindieControlRouter, mindieServiceRouter } from './mindie/index.js';
import { openaiErrorFormat } from './openai/errors.js';
import { openaiRouter } from './openai/index.js';
import { deliveryScopeMiddleware } from './shared/delivery-scope.js';
import { familyOfRequest, familyStatsMiddleware } from './shared/family-stats.js';
import { GatewayState, type GatewayContext } from './shared/gateway-context.js';
import { apiKeyAuth, ApiKeySet } from './shared/auth.js';
import { mindieErrorFormat } from './mindie/errors.js';
import type { ErrorFormatter } from './shared/error-boundary.js';
import { HttpError } from './shared/http-error.js';
import { requestLimits } from './shared/limits.js';
import { openLogSink, requestLog, type LogSink } from './shared/request-log.js';
import { startListener, type RunningListener } from './shared/listener.js';
import { tracingMiddleware } from './shared/tracing.js';
import { tgiErrorFormat } from './tgi/errors.js';
import { teiRouter } from './tei/index.js';
import { tokenizerRouter } from './tokenizer/index.js';
import { tgiInfoRouter, tgiRouter } from './tgi/index.js';
import { vllmRouter } from './vllm/index.js';
import { dashboardRouter, playgroundAssetsRouter, playgroundMiddleware } from './web/index.js';

const PRISM_VERSION = '0.1.0';

type ListenerName = 'service' | 'management' | 'metrics';

function routersFor(gw: GatewayContext, listener: ListenerName): Router[] {
  switch (listener) {
    case 'service':
      return [
        openaiRouter(gw),
        anthropicRouter(gw),
        ollamaRouter(gw),
        tokenizerRouter(gw),
        tgiRouter(gw),
        // Pooling models' routes (engine/pooling/): TEI, vLLM's and llama.cpp's.
        teiRouter(gw),
        vllmRouter(gw),
        llamacppRouter(gw),
        kserveRouter(gw),
        mindieServiceRouter(gw),
        healthRouter(gw),
        tgiInfoRouter(gw),
        playgroundAssetsRouter(),
        // The model-server protocol's metrics on the serving port, where an endpoint picker
        // (and vLLM's and TGI's users) scrape them; the metrics listener keeps its own.
        metricsRouter(gw),
      ];
    case 'management':
      return [
        healthRouter(gw),
        tgiInfoRouter(gw),
        mindieControlRouter(gw),
        loraRouter(gw),
        dashboardRouter(),
      ];
    case 'metrics':
      return [metricsRouter(gw)];
  }
}

/** MindIE accepts `/versions/{v}` in the path shape but does not support it. */
const versionsRejected: Koa.Middleware = async (ctx, next) => {
  if (/\/versions\/[^/]+/.test(ctx.path)) {
    ctx.status = 404;
    ctx.body = errorFormatForPath(ctx.path)(
      new HttpError(
        'not_found',
        'versions are not supported: remove /versions/{model_version} from the path',
      ),
    ).body;
    return;
  }
  await next();
};

/** MindIE's own routes under /v1 (native and management families): their errors stay MindIE's. */
const MINDIE_V1_ROUTE = /^\/v1\/(tokenizer|config|status|role|load_lora_adapter|unload_lora_adapter)(\/|$)/i;

/** Anthropic's Messages API under /v1. */
const ANTHROPIC_ROUTE = /^\/v1\/messages(\/|$)/i;

/**
 * The family a path belongs to decides the shape of errors answered before its handler runs.
 * Everything under /v1 is OpenAI's (an unknown /v1 path too: OpenAI clients read its 404)
 * except MindIE's own /v1 routes and Anthropic's /v1/messages; /api is Ollama's; the tokenizer
 * routes of vLLM and llama.cpp answer as OpenAI does.
 */
function errorFormatForPath(path: string): ErrorFormatter {
  if (ANTHROPIC_ROUTE.test(path)) return anthropicErrorFormat;
  if (/^\/api(\/|$)/i.test(path)) return ollamaErrorFormat;
  if (/^\/(tokenize|detokenize|apply-template)\/?$/i.test(path)) return openaiErrorFormat;
  if (/^\/v1(\/|$)/i.test(path) && !MINDIE_V1_ROUTE.test(path)) return openaiErrorFormat;
  if (/^\/(generate|generate_stream|info)?\/?$/i.test(path)) return tgiErrorFormat;
  // The pooling routes (gateways/tei/, vllm/, llamacpp/): TEI answers as TGI, the rest as OpenAI.
  if (/^\/(embed|embed_all|predict|rerank)$/i.test(path)) return tgiErrorFormat;
  if (/^\/(pooling|score|classify|v2\/rerank|embedding|reranking)$/i.test(path)) return openaiErrorFormat;
  return mindieErrorFormat;
}

/** Health probes and metrics scrapes: answered without an API key unless configured otherwise. */
export function isHealthOrMetricsRoute(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return (
    /^\/(health|health\/timed(-\d+)?|metrics|metrics-json|v2\/health\/(live|ready))$/.test(path) ||
    /^\/v2\/models\/[^/]+\/ready$/.test(path)
  );
}

/**
 * The web UI's pages and assets: always answered without an API key. They hold no data (the
 * pages ask for the key and send it with every API call they make), and a page that needs a
 * key to load could never ask for it. `GET /` without an HTML `Accept` is TGI's route, which
 * only answers 405 to a GET.
 */
function isWebUiRoute(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return path === '/' || path === '/dashboard' || /^\/web\/assets\/[^/]+$/.test(path);
}

/**
 * Requests no handler answered, in the family's error shape: 404 for an unknown path, 405 for a
 * known path with another method (the router's bare 405, and its 501 for a method it does not
 * know at all: the resource exists, the method is not allowed on it).
 */
const unrouted: Koa.Middleware = async (ctx, next) => {
  await next();
  if (ctx.respond === false || (ctx.body !== undefined && ctx.body !== null)) return;
  const format = errorFormatForPath(ctx.path);
  if (ctx.status === 404) {
    ctx.status = 404;
    ctx.body = format(new HttpError('not_found', `no route for ${ctx.method} ${ctx.path}`)).body;
  } else if (ctx.status === 405 || ctx.status === 501) {
    const allow = ctx.response.get('Allow');
    ctx.body = format(
      new HttpError(
        'validation',
        `method ${ctx.method} is not allowed on ${ctx.path}${allow ? ` (allowed: ${allow})` : ''}`,
      ),
    ).body;
    ctx.status = 405;
  }
};

/** One Koa app serving the routers of the given listeners (several when their addresses coincide). */
function buildApp(gw: GatewayContext, listeners: readonly ListenerName[], log: LogSink): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(requestLog(gw.config.requestLog, log, familyOfRequest));
  app.use(tracingMiddleware());
  app.use(requestLimits(gw.config.limits));
  // Listeners merged onto one address accept the keys of each of them.
  const keys = new ApiKeySet(listeners.flatMap((n) => gw.config[n].apiKeys ?? []));
  const open = gw.config.openHealthAndMetrics;
  app.use(
    apiKeyAuth({
      keys,
      isOpen: (method, path) => isWebUiRoute(method, path) || (open && isHealthOrMetricsRoute(method, path)),
      formatFor: errorFormatForPath,
    }),
  );
  app.use(unrouted);
  app.use(versionsRejected);
  if (listeners.includes('service')) {
    app.use(familyStatsMiddleware(gw.state.families));
    app.use(playgroundMiddleware());
    // Whether an answer has started reaching its client: a failed engine's request is retried until then.
    app.use(deliveryScopeMiddleware());
  }
  for (const name of listeners) {
    for (const router of routersFor(gw, name)) {
      app.use(router.routes());
      app.use(router.allowedMethods());
    }
  }
  return app;
}

export interface RunningGateway {
  readonly context: GatewayContext;
  readonly listeners: readonly RunningListener[];
  /** URL of a listener by name (its own, or the shared one it was merged into). */
  url(name: ListenerName): string;
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  readonly engine: Engine;
  readonly config: GatewayConfig;
  readonly state?: GatewayState;
  /**
   * Engines of other models behind the same listeners (`prism gateway` over engines of
   * different models): requests are routed by the model they name (model-dispatch.ts);
   * `engine`'s model takes those that name none.
   */
  readonly otherModels?: readonly Engine[];
}

const key = (l: ListenerConfig): string => `${l.host}:${l.port}`;

/**
 * Starts the listeners. Listeners configured on the same address share one server (and the
 * first one's TLS settings); port 0 always gets its own server.
 */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const engines = [options.engine, ...(options.otherModels ?? [])];
  const infos = await Promise.all(engines.map((e) => e.info()));
  const state = options.state ?? new GatewayState();
  // One context per model; each knows the others (GET /v1/models lists them all).
  const contexts: GatewayContext[] = engines.map((engine, i) => ({
    engine,
    config: options.config,
    info: infos[i]!,
    state,
    version: PRISM_VERSION,
    ...(engines.length > 1 ? { peers: infos.filter((_, j) => j !== i) } : {}),
  }));
  const names = new Set<string>();
  for (const info of infos) {
    if (names.has(info.modelName))
      throw new Error(
        `two engine groups serve the model name '${info.modelName}': group engines of one model together`,
      );
    names.add(info.modelName);
  }
  const gw = contexts[0]!;
  const groups = new Map<string, { cfg: ListenerConfig; names: ListenerName[] }>();
  for (const name of ['service', 'management', 'metrics'] as const) {
    const cfg = options.config[name];
    const k = cfg.port === 0 ? `${name}:0` : key(cfg);
    const group = groups.get(k);
    if (group) group.names.push(name);
    else groups.set(k, { cfg, names: [name] });
  }
  const started: RunningListener[] = [];
  const urls = new Map<ListenerName, string>();
  const log = openLogSink(options.config.requestLog);
  try {
    for (const { cfg, names } of groups.values()) {
      const apps = contexts.map((c) => ({
        model: c.info.modelName,
        handle: buildApp(c, names, log).callback(),
      }));
      const l = await startListener(
        names.join('+'),
        cfg,
        apps.length === 1 ? apps[0]!.handle : modelDispatcher(apps, gw.config.maxRequestBytes),
        gw.config.limits,
        names.includes('service'),
      );
      started.push(l);
      for (const n of names) urls.set(n, l.url);
    }
  } catch (err) {
    await Promise.all(started.map((l) => l.close()));
    await log.close();
    throw err;
  }
  return {
    context: gw,
    listeners: started,
    url: (name) => urls.get(name)!,
    close: async () => {
      await Promise.all(started.map((l) => l.close()));
      await log.close();
    },
  };
}
