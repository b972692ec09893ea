/**
 * The answer side of POST /v1/responses: the engine's events of one chat answer become the
 * Response object's output items (reasoning, message, function calls) and, streamed, the
 * Responses event sequence: `response.created`, `response.in_progress`, then per item
 * `output_item.added`, its content part, text / reasoning / arguments deltas and their `done`
 * events, `output_item.done`, and last `response.completed` (or `response.incomplete` when the
 * token budget ran out). The same builder serves the unary answer, which is the stream's last
 * Response object, so both forms agree item for item.
 */
import { randomUUID } from 'node:crypto';
import type { FinishEvent, TokenEvent, TokenLogprob, ToolCallDelta } from '../../engine/api.js';
import type { ResponsesBody } from './responses-request.js';

const shortId = (prefix: string): string => `${prefix}_${randomUUID().replace(/-/g, '')}`;

/** One Responses stream event; `type` names it and is also sent as the SSE `event:` line. */
export interface ResponsesEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

interface OpenItem {
  readonly kind: 'reasoning' | 'message' | 'function_call';
  readonly outputIndex: number;
  readonly id: string;
  text: string;
  /** Message items: per-token logprobs, when asked. */
  readonly logprobs: object[];
  /** Function calls: the engine's call id, name and tool-call index. */
  readonly callId?: string;
  readonly name?: string;
  readonly toolIndex?: number;
}

function outputLogprob(t: TokenLogprob): object {
  return {
    token: t.text,
    logprob: t.logprob,
    bytes: [...Buffer.from(t.text, 'utf-8')],
    top_logprobs: t.top.map((a) => ({
      token: a.text,
      logprob: a.logprob,
      bytes: [...Buffer.from(a.text, 'utf-8')],
    })),
  };
}

/** The request's settings, echoed in every Response object as the API does. */
function echoedSettings(body: ResponsesBody): Record<string, unknown> {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    service_tier: body.service_tier ?? 'default',
    store: false,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: 'text' }, verbosity: body.text?.verbosity ?? 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: (body.tools ?? []).map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      strict: t.strict ?? null,
    })),
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    user: body.user ?? null,
    background: false,
  };
}

export class ResponseBuilder {
  private sequence = 0;
  private readonly items: OpenItem[] = [];
  private open: OpenItem | undefined;
  private finish: FinishEvent | undefined;

  constructor(
    readonly id: string,
    private readonly model: string,
    private readonly body: ResponsesBody,
    private readonly wantLogprobs: boolean,
    private readonly createdAt = Math.floor(Date.now() / 1000),
  ) {}

  private event(type: string, fields: Record<string, unknown>): ResponsesEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  /** The Response object in its current state. */
  response(): Record<string, unknown> {
    const f = this.finish;
    const status = !f ? 'in_progress' : f.reason === 'length' ? 'incomplete' : 'completed';
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status,
      error: null,
      incomplete_details: f?.reason === 'length' ? { reason: 'max_output_tokens' } : null,
      model: this.model,
      output: f ? this.items.map((it) => this.itemBody(it, 'completed')) : [],
      ...echoedSettings(this.body),
      usage: f
        ? {
            input_tokens: f.usage.promptTokens,
            input_tokens_details: { cached_tokens: f.usage.cachedPromptTokens },
            output_tokens: f.usage.completionTokens,
            output_tokens_details: { reasoning_tokens: f.chat?.reasoningTokens ?? 0 },
            total_tokens: f.usage.promptTokens + f.usage.completionTokens,
          }
        : null,
    };
  }

  /** The first two events of a stream. */
  started(): ResponsesEvent[] {
    return [
      this.event('response.created', { response: this.response() }),
      this.event('response.in_progress', { response: this.response() }),
    ];
  }

  /** One token event → the stream events it adds (none when it added no visible text). */
  token(ev: TokenEvent): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    if (!ev.chat) {
      if (ev.text !== '') this.textDelta('message', ev.text, ev.logprobs, out);
      return out;
    }
    if (ev.chat.reasoning !== '') this.textDelta('reasoning', ev.chat.reasoning, undefined, out);
    if (ev.chat.content !== '') this.textDelta('message', ev.chat.content, ev.logprobs, out);
    for (const call of ev.chat.toolCalls) this.callDelta(call, out);
    return out;
  }

  /** The finish event → the closing events, `response.completed` (or `.incomplete`) last. */
  finished(ev: FinishEvent): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    this.close(out);
    // An answer that wrote nothing at all still has its (empty) message, as the API's do.
    if (this.items.length === 0) {
      this.openItem('message', out);
      this.close(out);
    }
    this.finish = ev;
    const status = ev.reason === 'length' ? 'response.incomplete' : 'response.completed';
    out.push(this.event(status, { response: this.response() }));
    return out;
  }

  /** A failure after the stream opened: the API's `error` event. */
  error(e: { message: string; type: string; param: string | null; code: string | null }): ResponsesEvent {
    return this.event('error', { code: e.code ?? e.type, message: e.message, param: e.param });
  }

  private itemBody(it: OpenItem, status: 'in_progress' | 'completed'): Record<string, unknown> {
    const done = status === 'completed';
    switch (it.kind) {
      case 'reasoning':
        return {
          id: it.id,
          type: 'reasoning',
          summary: [],
          content: done ? [{ type: 'reasoning_text', text: it.text }] : [],
          status,
        };
      case 'message':
        return {
          id: it.id,
          type: 'message',
          role: 'assistant',
          status,
          content: done ? [this.textPart(it)] : [],
        };
      case 'function_call':
        return {
          id: it.id,
          type: 'function_call',
          call_id: it.callId,
          name: it.name,
          arguments: done ? it.text : '',
          status,
        };
    }
  }

  private textPart(it: OpenItem): Record<string, unknown> {
    return it.kind === 'reasoning'
      ? { type: 'reasoning_text', text: it.text }
      : { type: 'output_text', text: it.text, annotations: [], logprobs: it.logprobs };
  }

  private openItem(
    kind: OpenItem['kind'],
    out: ResponsesEvent[],
    call?: { callId: string; name: string; toolIndex: number },
  ): OpenItem {
    const prefix = kind === 'reasoning' ? 'rs' : kind === 'message' ? 'msg' : 'fc';
    const it: OpenItem = {
      kind,
      outputIndex: this.items.length,
      id: shortId(prefix),
      text: '',
      logprobs: [],
      ...call,
    };
    this.items.push(it);
    this.open = it;
    out.push(
      this.event('response.output_item.added', {
        output_index: it.outputIndex,
        item: this.itemBody(it, 'in_progress'),
      }),
    );
    if (kind !== 'function_call') {
      out.push(
        this.event('response.content_part.added', {
          item_id: it.id,
          output_index: it.outputIndex,
          content_index: 0,
          part: { ...this.textPart(it), text: '', ...(kind === 'message' ? { logprobs: [] } : {}) },
        }),
      );
    }
    return it;
  }

  private close(out: ResponsesEvent[]): void {
    const it = this.open;
    if (!it) return;
    this.open = undefined;
    const where = { item_id: it.id, output_index: it.outputIndex };
    if (it.kind === 'function_call') {
      out.push(
        this.event('response.function_call_arguments.done', { ...where, name: it.name, arguments: it.text }),
      );
    } else {
      out.push(
        it.kind === 'message'
          ? this.event('response.output_text.done', {
              ...where,
              content_index: 0,
              text: it.text,
              logprobs: it.logprobs,
            })
          : this.event('response.reasoning_text.done', { ...where, content_index: 0, text: it.text }),
      );
      out.push(
        this.event('response.content_part.done', { ...where, content_index: 0, part: this.textPart(it) }),
      );
    }
    out.push(
      this.event('response.output_item.done', {
        output_index: it.outputIndex,
        item: this.itemBody(it, 'completed'),
      }),
    );
  }

  private textDelta(
    kind: 'reasoning' | 'message',
    delta: string,
    logprobs: readonly TokenLogprob[] | undefined,
    out: ResponsesEvent[],
  ): void {
    let it = this.open;
    if (it?.kind !== kind) {
      this.close(out);
      it = this.openItem(kind, out);
    }
    it.text += delta;
    const where = { item_id: it.id, output_index: it.outputIndex, content_index: 0 };
    if (kind === 'reasoning') {
      out.push(this.event('response.reasoning_text.delta', { ...where, delta }));
      return;
    }
    const lps = this.wantLogprobs ? (logprobs ?? []).map(outputLogprob) : [];
    it.logprobs.push(...lps);
    out.push(this.event('response.output_text.delta', { ...where, delta, logprobs: lps }));
  }

  private callDelta(call: ToolCallDelta, out: ResponsesEvent[]): void {
    let it = this.open;
    if (it?.kind !== 'function_call' || it.toolIndex !== call.index) {
      this.close(out);
      it = this.openItem('function_call', out, {
        callId: call.id ?? shortId('call'),
        name: call.function.name ?? '',
        toolIndex: call.index,
      });
    }
    const delta = call.function.arguments ?? '';
    if (delta === '') return;
    it.text += delta;
    out.push(
      this.event('response.function_call_arguments.delta', {
        item_id: it.id,
        output_index: it.outputIndex,
        delta,
      }),
    );
  }
}
