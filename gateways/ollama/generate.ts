/**
 * POST /api/chat and /api/generate: one engine request (request.ts), answered as Ollama does —
 * streamed by default as NDJSON (one JSON object a line, the last one `done: true` with the
 * counts and durations in nanoseconds), or one object with `stream: false`. Chat answers put
 * the text in `message.content` (reasoning in `message.thinking`, calls in
 * `message.tool_calls` with their arguments as objects); generate answers in `response` and
 * `thinking`.
 */
import type { Context } from 'koa';
import type { FinishEvent, GenerateEvent, GenerateRequest, TokenLogprob } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import { adapterFor, assertAccepting, resolveModel, type GatewayContext } from '../shared/gateway-context.js';
import { noteIgnoredFields } from '../shared/ignored-fields.js';
import { clientGoneSignal } from '../shared/sse.js';
import { streamNdjson } from '../shared/stream.js';
import { withConstraintField } from '../shared/structured.js';
import { ollamaErrorBody } from './errors.js';
import {
  chatRequest,
  generateRequest,
  validateChat,
  validateGenerate,
  type OllamaRequest,
} from './request.js';

/** Ollama names a model `name:tag`; the served model (or an adapter) is `name` or `name:latest`. */
export function resolveOllamaModel(gw: GatewayContext, name: string): string {
  return resolveModel(gw, name.endsWith(':latest') ? name.slice(0, -':latest'.length) : name);
}

type Kind = 'chat' | 'generate';

const ns = (ms: number): number => Math.round(ms * 1e6);

function finalFields(f: FinishEvent): Record<string, unknown> {
  const t = f.timings;
  return {
    done: true,
    done_reason: f.reason === 'length' ? 'length' : 'stop',
    total_duration: ns(t.queueMs + t.prefillMs + t.decodeMs),
    load_duration: 0,
    prompt_eval_count: f.usage.promptTokens,
    prompt_eval_duration: ns(t.prefillMs),
    eval_count: f.usage.completionTokens,
    eval_duration: ns(t.decodeMs),
  };
}

function toolCalls(f: FinishEvent): Record<string, unknown>[] {
  return (f.chat?.toolCalls ?? []).map((c, index) => {
    let args: unknown = {};
    try {
      args = JSON.parse(c.function.arguments);
    } catch {
      // cut by num_predict inside the call: no arguments object to give
    }
    return { function: { index, name: c.function.name, arguments: args } };
  });
}

function logprobList(list: readonly TokenLogprob[]): Record<string, unknown>[] {
  return list.map((t) => ({
    token: t.text,
    logprob: t.logprob,
    top_logprobs: t.top.map((a) => ({ token: a.text, logprob: a.logprob })),
  }));
}

/** One piece of an answer in the route's shape: chat's `message`, generate's `response`. */
function piece(kind: Kind, content: string, thinking: string): Record<string, unknown> {
  const think = thinking !== '' ? { thinking } : {};
  return kind === 'chat'
    ? { message: { role: 'assistant', content, ...think } }
    : { response: content, ...think };
}

/** `model` is the name as the client sent it (Ollama echoes it), `served` what it resolved to. */
async function answer(
  gw: GatewayContext,
  ctx: Context,
  kind: Kind,
  model: { name: string; served: string },
  mapped: OllamaRequest,
  stream: boolean,
): Promise<void> {
  const head = (): Record<string, unknown> => ({ model: model.name, created_at: new Date().toISOString() });
  if (mapped.loadOnly) {
    // Ollama's "load the model" request: it is always loaded here.
    ctx.body = { ...head(), ...piece(kind, '', ''), done: true, done_reason: 'load' };
    return;
  }
  assertAccepting(gw);
  const request: GenerateRequest = {
    requestId: newRequestId('ollama'),
    ...mapped.request,
    ...adapterFor(gw, model.served),
  };
  const c = request.constraint;
  // The engine's errors about the constraint name `format`, the client's field.
  withConstraintField(
    request,
    c
      ? { constraint: c, field: 'format', ...(c.kind === 'json_schema' ? { schemaField: 'format' } : {}) }
      : undefined,
  );
  const signal = clientGoneSignal(ctx);
  const logprobs = request.params.logprobs === true;
  if (!stream) {
    const a = await collect(gw, request, signal);
    const f = a.choices[0].finish;
    const calls = toolCalls(f);
    const body = {
      ...head(),
      ...piece(kind, f.chat ? f.chat.content : f.text, f.chat?.reasoningContent ?? ''),
    };
    if (calls.length > 0) (body.message as Record<string, unknown>).tool_calls = calls;
    ctx.body = {
      ...body,
      ...(logprobs ? { logprobs: logprobList(a.choices[0].logprobs) } : {}),
      ...finalFields(f),
    };
    return;
  }
  await streamNdjson<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: ollamaErrorBody,
    onEvent: (ev, out) => {
      const line = (o: Record<string, unknown>): void => out.write(JSON.stringify(o) + '\n');
      if (ev.type === 'token') {
        const content = ev.chat ? ev.chat.content : ev.text;
        const thinking = ev.chat?.reasoning ?? '';
        if (content === '' && thinking === '' && !ev.logprobs?.length) return;
        line({
          ...head(),
          ...piece(kind, content, thinking),
          ...(logprobs && ev.logprobs ? { logprobs: logprobList(ev.logprobs) } : {}),
          done: false,
        });
        return;
      }
      // Ollama sends the calls whole, once parsed, before the closing line.
      const calls = toolCalls(ev);
      if (calls.length > 0)
        line({ ...head(), message: { role: 'assistant', content: '', tool_calls: calls }, done: false });
      line({ ...head(), ...piece(kind, '', ''), ...finalFields(ev) });
    },
  });
}

export async function handleChat(gw: GatewayContext, ctx: Context): Promise<void> {
  const { body, ignored } = validateChat(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const served = resolveOllamaModel(gw, body.model);
  const mapped = await chatRequest(body, gw.info.maxSeqLen, ignored, gw.config.media);
  noteIgnoredFields(ctx, ignored);
  await answer(gw, ctx, 'chat', { name: body.model, served }, mapped, body.stream !== false);
}

export async function handleGenerate(gw: GatewayContext, ctx: Context): Promise<void> {
  const { body, ignored } = validateGenerate(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const served = resolveOllamaModel(gw, body.model);
  const mapped = await generateRequest(body, gw.info.maxSeqLen, ignored, gw.config.media);
  noteIgnoredFields(ctx, ignored);
  await answer(gw, ctx, 'generate', { name: body.model, served }, mapped, body.stream !== false);
}
