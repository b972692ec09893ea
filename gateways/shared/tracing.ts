/**
 * OpenTelemetry for the gateways. Spans are recorded and exported (OTLP/HTTP) only when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set. Otherwise tracing is off:
 * no tracer provider, only the context manager and the W3C propagator, so a client's
 * `traceparent` still reaches the engine in the gRPC metadata at no measurable cost.
 *
 * Spans: one SERVER span per HTTP request (`POST /v1/chat/completions`) and one CLIENT span
 * per engine request (`prism.generate`, attributes: model, token counts, finish reason). The
 * engine continues the trace from the gRPC metadata: its RPC SERVER span, and under that the
 * `prism.queue`, `prism.prefill`, `prism.decode` spans it records live (engine/request-spans.ts).
 * In `prism serve` both sides share this process's one provider; each span is recorded once,
 * by the side that owns it.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Middleware } from 'koa';
import {
  traceExportConfigured,
  type Engine,
  type GenerateEvent,
  type GenerateRequest,
} from '../../engine/api.js';

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
  if (traceExportConfigured()) {
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
      // The standard variable wins over the command's default name, as the docs promise.
      'service.name': process.env.OTEL_SERVICE_NAME || options.serviceName || 'prism',
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
