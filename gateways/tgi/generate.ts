/**
 * TGI routes: POST /generate (with `inputs`), /generate_stream, POST / (either, by `stream`),
 * GET /info. Responses follow TGI's router: `generated_text` + optional `details`, and SSE
 * frames `{index, token, top_tokens, generated_text, details}` where the last token's frame
 * carries the full text and details.
 */
import type { Context } from 'koa';
import type { FinishEvent, GenerateEvent, GenerateRequest, TokenLogprob } from '../../engine/api.js';
import { collect, events, newRequestId, type CollectedChoice } from '../shared/engine-calls.js';
import { assertAccepting, type GatewayContext } from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
import { clientGoneSignal } from '../shared/sse.js';
import { streamSse } from '../shared/stream.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { tgiErrorBody } from './errors.js';
import { tgiPrompt, tgiSamples, toEngineRequest, validateTgi, type TgiBody } from './request.js';

/** TGI distinguishes an EOS stop from a stop-sequence stop. */
async function tgiFinishReason(gw: GatewayContext, body: TgiBody, f: FinishEvent): Promise<string> {
  if (f.reason === 'length') return 'length';
  if (f.reason !== 'stop') return f.reason;
  const stops = body.parameters?.stop ?? [];
  if (stops.length === 0) return 'eos_token';
  // The finish text excludes the stop string; the generated ids still hold it.
  const { text } = await gw.engine.detokenize(f.tokenIds, false);
  return stops.some((s) => text.includes(s)) ? 'stop_sequence' : 'eos_token';
}

function tokenOf(t: TokenLogprob | undefined, id: number, text: string): object {
  return { id, text, logprob: t?.logprob ?? null, special: false };
}

function topTokens(t: TokenLogprob | undefined): object[] {
  return (t?.top ?? []).map((a) => ({ id: a.tokenId, text: a.text, logprob: a.logprob, special: false }));
}

/** TGI's `details.prefill`: the prompt's tokens with their logprobs (the first has none). */
function prefillTokens(f: FinishEvent): object[] {
  return (f.promptLogprobs ?? []).map((t) => ({ id: t.tokenId, text: t.text, logprob: t.logprob }));
}

/**
 * Candidates of a best_of request, best first: by cumulative logprob, ties in index order —
 * the engine's own best_of ranking (its `n < best_of` path), applied here because TGI reports
 * the candidates it did not choose.
 */
function ranked(choices: readonly CollectedChoice[]): CollectedChoice[] {
  return [...choices].sort((a, b) => b.finish.cumulativeLogprob - a.finish.cumulativeLogprob);
}

/** The engine request of a TGI body: a fresh id, the P/D headers, `inputs` with its images. */
async function engineRequest(
  gw: GatewayContext,
  ctx: Context,
  body: TgiBody,
  streaming: boolean,
): Promise<GenerateRequest> {
  const ids = { requestId: newRequestId('tgi'), ...pdHeaderFields(ctx) };
  return toEngineRequest(gw, body, ids, streaming, await tgiPrompt(gw, body.inputs));
}

async function generateOnce(gw: GatewayContext, ctx: Context, body: TgiBody): Promise<object> {
  assertAccepting(gw);
  const request = await engineRequest(gw, ctx, body, false);
  const p = body.parameters ?? {};
  const answer = await collect(gw, request, clientGoneSignal(ctx));
  const [c, ...others] = ranked(answer.choices);
  const prefix = p.return_full_text ? body.inputs : '';
  const out: Record<string, unknown> = { generated_text: prefix + c.text };
  if (p.details) {
    const prefill = p.decoder_input_details ? prefillTokens(c.finish) : [];
    const sequence = async (s: CollectedChoice) => ({
      finish_reason: await tgiFinishReason(gw, body, s.finish),
      generated_tokens: s.tokenIds.length,
      seed: tgiSamples(p) ? s.finish.seed : null,
      prefill,
      tokens: s.tokenIds.map((id, i) => tokenOf(s.logprobs[i], id, s.logprobs[i]?.text ?? '')),
      ...(p.top_n_tokens ? { top_tokens: s.logprobs.map(topTokens) } : {}),
    });
    out.details = {
      ...(await sequence(c)),
      ...(others.length > 0
        ? {
            best_of_sequences: await Promise.all(
              others.map(async (s) => ({ generated_text: prefix + s.text, ...(await sequence(s)) })),
            ),
          }
        : {}),
      prompt_tokens: answer.usage.promptTokens,
    };
  }
  return out;
}

export async function handleGenerate(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = validateTgi(raw, ctx);
  ctx.body = await generateOnce(gw, ctx, body);
}

/** Resolves to the next event if it is already waiting (same tick), else to `undefined`. */
function readyOrUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  return Promise.race([p, new Promise<undefined>((r) => setImmediate(() => r(undefined)))]);
}

/** Marks a pause in a stream: the next event was not waiting when the last one was handled. */
const IDLE = Symbol('idle');

/**
 * The events, with IDLE between two of them when the second was not already waiting. TGI puts
 * the finish details on the last token's frame, so the newest token frame is held back only
 * while the finish event may follow in the same tick; a pause sends it. Never IDLE before the
 * first event: that one decides between an HTTP error status and a 200 stream.
 */
async function* withPauses<T>(it: AsyncIterator<T>): AsyncGenerator<T | typeof IDLE> {
  let pending = it.next();
  let r: IteratorResult<T> | undefined = await pending;
  for (;;) {
    if (r === undefined) {
      yield IDLE;
      r = await pending;
    }
    if (r.done) return;
    pending = it.next();
    yield r.value;
    r = await readyOrUndefined(pending);
  }
}

async function generateStream(gw: GatewayContext, ctx: Context, body: TgiBody): Promise<void> {
  assertAccepting(gw);
  const request = await engineRequest(gw, ctx, body, true);
  const p = body.parameters ?? {};
  const signal = clientGoneSignal(ctx);
  let index = 0;
  let text = p.return_full_text ? body.inputs : '';
  /** The newest token frame, held back only while the finish event may follow in the same tick. */
  let held: Record<string, unknown> | undefined;
  let lastId = 0;
  await streamSse<GenerateEvent | typeof IDLE>(ctx, {
    events: withPauses(events(gw, request, signal)[Symbol.asyncIterator]()),
    signal,
    errorBody: tgiErrorBody,
    onEvent: async (ev, sse) => {
      if (ev === IDLE) {
        if (held) sse.data(held);
        held = undefined;
      } else if (ev.type === 'token') {
        if (held) sse.data(held);
        held = undefined;
        // One frame per token id; a multi-id event (a UTF-8 character split over tokens)
        // carries its text on the last id.
        ev.tokenIds.forEach((id, k) => {
          const last = k === ev.tokenIds.length - 1;
          const lp = ev.logprobs?.[k];
          const frame = {
            index: ++index,
            token: tokenOf(lp, id, last ? ev.text : ''),
            ...(p.top_n_tokens ? { top_tokens: topTokens(lp) } : {}),
            generated_text: null,
            details: null,
          };
          lastId = id;
          if (last) held = frame;
          else sse.data(frame);
        });
        text += ev.text;
      } else {
        const details = {
          finish_reason: await tgiFinishReason(gw, body, ev),
          generated_tokens: ev.tokenIds.length,
          seed: tgiSamples(p) ? ev.seed : null,
          input_length: ev.usage.promptTokens,
        };
        const frame = held ??
          // No token frame to close (nothing generated in this tick): an empty special token.
          {
            index: ++index,
            token: { id: lastId, text: '', logprob: null, special: true },
            generated_text: null,
            details: null,
          };
        sse.data({ ...frame, generated_text: text, details });
        held = undefined;
      }
    },
    onEnd: (sse) => {
      if (held) sse.data(held);
    },
  });
}

export async function handleGenerateStream(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  await generateStream(gw, ctx, validateTgi(raw, ctx));
}

/** POST /: `stream` true → SSE as /generate_stream; false → `[ /generate answer ]`. */
export async function handleRoot(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  if (
    raw !== null &&
    typeof raw === 'object' &&
    'stream' in raw &&
    typeof (raw as { stream: unknown }).stream !== 'boolean'
  ) {
    throw invalid('stream', 'Stream must be boolean type.');
  }
  const body = validateTgi(raw, ctx);
  if (body.stream) return generateStream(gw, ctx, body);
  ctx.body = [await generateOnce(gw, ctx, body)];
}

export function handleInfo(gw: GatewayContext, ctx: Context): void {
  const i = gw.info;
  // TGI's device type names: 'cuda' on an NVIDIA GPU, 'cpu' otherwise.
  const deviceType = i.device.startsWith('cuda') ? 'cuda' : 'cpu';
  ctx.body = {
    model_id: i.modelName,
    model_sha: null,
    model_dtype: i.dtype,
    model_device_type: deviceType,
    model_pipeline_tag: 'text-generation',
    max_concurrent_requests: i.maxBatchSize,
    max_best_of: 128,
    max_stop_sequences: 16,
    max_input_length: i.maxInputTokenLen,
    max_input_tokens: i.maxInputTokenLen,
    max_total_tokens: i.maxSeqLen,
    waiting_served_ratio: null,
    max_batch_total_tokens: i.maxPrefillTokens,
    max_waiting_tokens: null,
    validation_workers: null,
    max_client_batch_size: 1,
    router: 'prism',
    version: gw.version,
    sha: null,
    docker_label: null,
    // MindIE's /info nests the model facts too (mindie-compat.md §1.11).
    models: [
      {
        model_device_type: deviceType,
        model_dtype: i.dtype,
        model_id: i.modelName,
        model_pipeline_tag: 'text-generation',
        model_sha: null,
        max_total_tokens: i.maxSeqLen,
      },
    ],
  };
}
