/**
 * Engine-side tracing for the generate RPCs: one SERVER span per call that continues the
 * caller's W3C `traceparent`/`tracestate` from gRPC metadata (the engine client sends them
 * through its `metadata` hook). Under it, engine-core records each request's queue / prefill /
 * decode spans (engine/request-spans.ts). Uses only @opentelemetry/api: with no tracer
 * provider registered in the process (a bare `prism engine`) every call here is a no-op.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import type { Metadata } from '@grpc/grpc-js';
import type { FinishEvent } from '../types.js';

const tracer = trace.getTracer('prism-engine');

const metadataGetter: TextMapGetter<Metadata> = {
  keys: (md) => Object.keys(md.getMap()),
  get: (md, key) => {
    const values = md.get(key).map(String);
    return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
  },
};

export interface RpcSpan {
  /** The context to run the engine call in (the span is its active span). */
  readonly context: Context;
  finish(event: FinishEvent): void;
  fail(err: unknown): void;
  end(): void;
}

export function startRpcSpan(method: string, metadata: Metadata, requestId: string | undefined): RpcSpan {
  const parent = propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
  const span: Span = tracer.startSpan(
    `prism.engine.v1.Engine/${method}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'rpc.system': 'grpc',
        'rpc.service': 'prism.engine.v1.Engine',
        'rpc.method': method,
        ...(requestId ? { 'prism.request_id': requestId } : {}),
      },
    },
    parent,
  );
  let completion = 0;
  return {
    context: trace.setSpan(parent, span),
    finish(e) {
      completion += e.usage.completionTokens;
      span.setAttributes({
        'prism.request_id': e.requestId,
        'gen_ai.usage.input_tokens': e.usage.promptTokens,
        'gen_ai.usage.output_tokens': completion,
        'prism.cached_prompt_tokens': e.usage.cachedPromptTokens,
        'gen_ai.response.finish_reasons': e.reason,
      });
      if (e.reason === 'error')
        span.setStatus({ code: SpanStatusCode.ERROR, message: e.error ?? 'generation failed' });
    },
    fail(err) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: err instanceof Error ? err.message : String(err),
      });
    },
    end: () => span.end(),
  };
}

/** Runs `fn` with the span's context active (so engine-core spans, if any, nest under it). */
export function withSpan<T>(span: RpcSpan, fn: () => T): T {
  return context.with(span.context, fn);
}
