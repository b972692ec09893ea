/**
 * OpenTelemetry for the gateways. Spans are recorded and exported (OTLP/HTTP) only when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set. Otherwise tracing is off:
 * no tracer provider, only the context manager and the W3C propagator, so a client's
 * `traceparent` still reaches the engine in the gRPC metadata at no measurable cost.
 *
 * Spans: one SERVER span per HTTP request (`POST /v1/chat/completions`), one CLIENT span per
 * engine request (`prism.generate`, attributes: model, token counts, finish reason), and under
 * it `prism.queue`, `prism.prefill`, `prism.decode`, placed from the engine's own timings.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context as OtelContext,
  type Span,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Middleware } from 'koa';
import type { Engine, FinishEvent, GenerateEvent, GenerateRequest } from '../../engine/types.js';

const TRACER = 'prism-gateway';

let provider: NodeTracerProvider | undefined;
let initialised = false;

export interface TracingOptions {
  readonly serviceName?: string;
  /** Extra processors (tests use an in-memory exporter). */
  readonly spanProcessors?: readonly SpanProcessor[];
}

/**
 * Sets up tracing once per process (later calls return what the first one made): a tracer
 * provider when spans go somewhere, else only context propagation. Returns the provider, if any.
 */
export function initTracing(options: TracingOptions = {}): NodeTracerProvider | undefined {
  if (initialised) return provider;
  initialised = true;
  const processors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    // The exporter reads the endpoint, headers and timeout from the standard OTEL_* variables.
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  if (processors.length === 0) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    return undefined;
  }
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'prism',
    }),
    spanProcessors: processors,
  });
  // Registers the AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  return provider;
}

export async function shutdownTracing(): Promise<void> {
  await provider?.shutdown();
}

/** `traceparent` / `tracestate` of the active span: the metadata the gRPC engine client sends. */
export function traceMetadata(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** SERVER span per HTTP request, continuing the client's `traceparent` when it sends one. */
export function tracingMiddleware(): Middleware {
  const tracer = trace.getTracer(TRACER);
  return async (ctx, next) => {
    const parent = propagation.extract(context.active(), ctx.headers);
    const span = tracer.startSpan(
      `${ctx.method} ${ctx.path}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': ctx.method,
          'url.path': ctx.path,
          'server.port': ctx.req.socket.localPort ?? 0,
        },
      },
      parent,
    );
    // Ended when the response is done: streams outlive the middleware chain.
    ctx.res.once('close', () => {
      const status = ctx.res.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!ctx.res.writableFinished) span.setAttribute('prism.client_disconnected', true);
      span.end();
    });
    await context.with(trace.setSpan(parent, span), next);
  };
}

/** Child spans placed after the fact from the engine's timings (milliseconds). */
function timingSpans(parentCtx: OtelContext, start: number, f: FinishEvent): void {
  const tracer = trace.getTracer(TRACER);
  const t = f.timings;
  const phases: [string, number, number][] = [
    ['prism.queue', start, start + t.queueMs],
    ['prism.prefill', start + t.queueMs, start + t.queueMs + t.prefillMs],
    ['prism.decode', start + t.queueMs + t.prefillMs, start + t.queueMs + t.prefillMs + t.decodeMs],
  ];
  for (const [name, from, to] of phases) {
    const s = tracer.startSpan(
      name,
      { startTime: from, attributes: { 'prism.request_id': f.requestId } },
      parentCtx,
    );
    if (name === 'prism.prefill') s.setAttribute('prism.prompt_tokens', f.usage.promptTokens);
    if (name === 'prism.decode') s.setAttribute('prism.completion_tokens', f.usage.completionTokens);
    s.end(to);
  }
}

/**
 * `engine.generate` inside a CLIENT span: the engine call runs with that span active, so the
 * gRPC client's metadata hook sends its `traceparent` to the engine.
 */
export async function* tracedGenerate(
  engine: Engine,
  request: GenerateRequest,
  signal: AbortSignal,
  model: string,
): AsyncGenerator<GenerateEvent> {
  const tracer = trace.getTracer(TRACER);
  const start = Date.now();
  const span: Span = tracer.startSpan('prism.generate', {
    kind: SpanKind.CLIENT,
    attributes: {
      'gen_ai.request.model': model,
      'prism.request_id': request.requestId ?? '',
      'prism.prompt_kind': request.prompt.kind,
      ...(request.params.maxNewTokens !== undefined
        ? { 'gen_ai.request.max_tokens': request.params.maxNewTokens }
        : {}),
    },
  });
  const spanCtx = trace.setSpan(context.active(), span);
  const it = context.with(spanCtx, () => engine.generate(request, signal))[Symbol.asyncIterator]();
  let firstToken = true;
  let completion = 0;
  try {
    for (;;) {
      const r = await context.with(spanCtx, () => it.next());
      if (r.done) break;
      const ev = r.value;
      if (ev.type === 'token' && firstToken) {
        firstToken = false;
        span.addEvent('first_token');
      }
      if (ev.type === 'finish') {
        completion += ev.usage.completionTokens;
        span.setAttributes({
          'gen_ai.usage.input_tokens': ev.usage.promptTokens,
          'gen_ai.usage.output_tokens': completion,
          'prism.cached_prompt_tokens': ev.usage.cachedPromptTokens,
          [`gen_ai.response.finish_reasons`]: ev.reason,
        });
        if (ev.index === 0) timingSpans(spanCtx, start, ev);
        if (ev.reason === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: ev.error });
      }
      yield ev;
    }
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    if (signal.aborted) span.setAttribute('prism.cancelled', true);
    span.end();
    // An early exit of the caller (client gone) also closes the engine stream.
    await it.return?.(undefined);
  }
}
