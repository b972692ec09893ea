/**
 * OpenTelemetry spans the engine core records live for each request, at its three
 * transitions: `prism.queue` (arrival → first scheduled), `prism.prefill` (first scheduled →
 * first token) and `prism.decode` (first token → finish). They are children of the span that
 * was active when the request was submitted — the engine's RPC SERVER span, since the gRPC
 * server calls `generate` inside it.
 *
 * Only @opentelemetry/api is used. A request submitted with no recording span active (no
 * tracer provider in the process, an unsampled trace, or an in-process caller that traces
 * nothing) gets no spans at all: `startRequestSpans` returns undefined after one context
 * lookup, so a bare `prism engine` pays nothing measurable, and phase spans never turn up as
 * parentless root traces of their own.
 *
 * Times are the engine's own `performance.now()` readings, so the spans show exactly the
 * intervals the engine's timings report. They are turned into epoch milliseconds with one
 * offset per request, taken from the wall clock at admission (as the SDK anchors a span's
 * start): the request's spans then join without gaps or overlaps, where letting the SDK
 * convert each span's times separately would jitter every boundary by up to 1 ms.
 */
import { context, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { FinishReason } from './types.js';

const tracer = trace.getTracer('prism-engine');

export interface RequestSpanInfo {
  readonly requestId: string;
  /** Served model name (`gen_ai.request.model`). */
  readonly model: string;
  /** performance.now() at arrival. */
  readonly arrival: number;
}

export interface FinishInfo {
  /** One per returned choice. */
  readonly reasons: readonly FinishReason[];
  readonly completionTokens: number;
  /** The first error message when a choice failed. */
  readonly error?: string;
}

type Phase = 'queue' | 'prefill' | 'decode' | 'done';

/** The open phase span of one request; engine-core calls one method per transition. */
export class RequestSpans {
  private phase: Phase = 'queue';
  private span: Span;
  private prefillChunks = 0;
  private readonly common: Attributes;
  /** Added to a performance.now() reading to get epoch milliseconds. */
  private readonly epochOffset = Date.now() - performance.now();

  constructor(
    private readonly parent: Context,
    info: RequestSpanInfo,
  ) {
    this.common = { 'prism.request_id': info.requestId, 'gen_ai.request.model': info.model };
    this.span = this.open('prism.queue', info.arrival);
  }

  /** A step that includes the request was planned at `now` (first one: leaves the queue). */
  scheduled(now: number): void {
    if (this.phase === 'queue') {
      this.span.end(this.epoch(now));
      this.phase = 'prefill';
      this.span = this.open('prism.prefill', now);
    }
    // Chunked prefill (and re-prefill after preemption) takes several steps before a token.
    if (this.phase === 'prefill') this.prefillChunks++;
  }

  /** The first token was sampled at `now`. */
  firstToken(now: number, promptTokens: number, cachedPromptTokens: number): void {
    if (this.phase !== 'prefill') return;
    this.span.setAttributes({
      'gen_ai.usage.input_tokens': promptTokens,
      'prism.cached_prompt_tokens': cachedPromptTokens,
      'prism.prefill_chunks': this.prefillChunks,
    });
    this.span.end(this.epoch(now));
    this.phase = 'decode';
    this.span = this.open('prism.decode', now);
  }

  /**
   * The request finished at `now`, in whatever phase it was: a cancelled request's open span
   * says `prism.cancelled`, a failed one gets status ERROR.
   */
  finish(now: number, f: FinishInfo): void {
    if (this.phase === 'done') return;
    if (this.phase === 'decode') {
      this.span.setAttributes({
        'gen_ai.usage.output_tokens': f.completionTokens,
        'gen_ai.response.finish_reasons': [...f.reasons],
      });
    }
    if (f.reasons.includes('error')) {
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: f.error ?? 'generation failed' });
    } else if (f.reasons.includes('cancelled')) {
      this.span.setAttribute('prism.cancelled', true);
    }
    this.span.end(this.epoch(now));
    this.phase = 'done';
  }

  private open(name: string, startTime: number): Span {
    return tracer.startSpan(name, { startTime: this.epoch(startTime), attributes: this.common }, this.parent);
  }

  private epoch(performanceMs: number): number {
    return performanceMs + this.epochOffset;
  }
}

/** Spans for a request submitted now, under the active span; undefined when nothing records. */
export function startRequestSpans(info: RequestSpanInfo): RequestSpans | undefined {
  const parent = context.active();
  if (!trace.getSpan(parent)?.isRecording()) return undefined;
  return new RequestSpans(parent, info);
}
