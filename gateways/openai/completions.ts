/**
 * POST /v1/completions: a prompt (text or token ids; a list of them runs one engine request per
 * prompt, choices numbered prompt-major as OpenAI does) → text_completion or its SSE chunks.
 */
import type { Context } from 'koa';
import type { Engine, GenerateEvent, GenerateRequest, PromptInput, Usage } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { collect, events, newRequestId, type CollectedAnswer } from '../shared/engine-calls.js';
import {
  adapterFor,
  assertAccepting,
  resolveRequestedModel,
  type GatewayContext,
} from '../shared/gateway-context.js';
import { invalid, notSupported } from '../shared/http-error.js';
import { compileSchema } from '../shared/schema.js';
import { constraintFromFields, withConstraintField } from '../shared/structured.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { clientGoneSignal } from '../shared/sse.js';
import { mergeAnswers, streamSse, type Tagged } from '../shared/stream.js';
import { openaiErrorBody } from './errors.js';
import { kvTransferFromBody, kvTransferResponse } from './kv-transfer.js';
import {
  completionLogprobs,
  promptLogprobsParam,
  promptLogprobsSchema,
  vllmPromptLogprobs,
} from './prompt-logprobs.js';
import { nullable } from '../shared/schema.js';
import {
  openaiFinishReason,
  openaiUsage,
  samplingSchemaProperties,
  toSamplingParams,
  type SamplingFields,
} from './sampling.js';

const tokenList = { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } };

const completionSchema = {
  type: 'object',
  required: ['prompt'],
  properties: {
    ...samplingSchemaProperties,
    // 0 with echo (or prompt_logprobs): the prompt is scored and nothing generated.
    max_tokens: nullable({ type: 'integer', minimum: 0 }),
    ...promptLogprobsSchema,
    prompt: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: 64, items: { type: 'string' } },
        tokenList,
        { type: 'array', minItems: 1, maxItems: 64, items: tokenList },
      ],
    },
    echo: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    logprobs: { anyOf: [{ type: 'integer', minimum: 0, maximum: 20 }, { type: 'null' }] },
    best_of: { anyOf: [{ type: 'integer', minimum: 1, maximum: 128 }, { type: 'null' }] },
    suffix: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    response_format: {
      anyOf: [
        { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        { type: 'null' },
      ],
    },
  },
};

interface CompletionBody extends SamplingFields {
  prompt: string | string[] | number[] | number[][];
  echo?: boolean | null;
  logprobs?: number | null;
  best_of?: number | null;
  suffix?: string | null;
  response_format?: { type: string } | null;
  structured_outputs?: unknown;
  guided_json?: unknown;
  guided_regex?: unknown;
  guided_choice?: unknown;
  guided_grammar?: unknown;
  prompt_logprobs?: number | null;
}

const validateCompletion = compileSchema<CompletionBody>(completionSchema);

function prompts(p: CompletionBody['prompt']): PromptInput[] {
  if (typeof p === 'string') return [{ kind: 'text', text: p }];
  if (p.every((x) => typeof x === 'number')) return [{ kind: 'tokens', ids: p as number[] }];
  return (p as (string | number[])[]).map((x) =>
    typeof x === 'string' ? { kind: 'text', text: x } : { kind: 'tokens', ids: x },
  );
}

async function promptText(engine: Engine, p: PromptInput): Promise<string> {
  if (p.kind === 'text') return p.text;
  if (p.kind === 'tokens') return (await engine.detokenize(p.ids, false)).text;
  return '';
}

export async function handleCompletions(gw: GatewayContext, ctx: Context): Promise<void> {
  const raw = await readJsonBody(ctx, gw.config.maxRequestBytes);
  const body = validateCompletion(raw);
  noteUnknownFields(ctx, raw, completionSchema);
  const model = await resolveRequestedModel(gw, body.model);
  if (body.suffix) throw notSupported('suffix', 'insertion (suffix)');
  if (body.stream && body.best_of && body.best_of !== (body.n ?? 1)) {
    throw invalid('best_of', 'must equal n when stream is true');
  }
  assertAccepting(gw);
  const id = newRequestId('cmpl');
  const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
  const top = body.logprobs ?? 0;
  const scoreOnly = body.max_tokens === 0;
  if (scoreOnly && !body.echo && body.prompt_logprobs == null)
    throw invalid(
      'max_tokens',
      'must be >= 1 (0 only with echo or prompt_logprobs: the prompt scored alone)',
    );
  // echo with logprobs scores the prompt's tokens too (as do max_tokens 0 and prompt_logprobs).
  const echoTop = body.echo && (wantLogprobs || scoreOnly) ? top : undefined;
  const promptLogprobs = promptLogprobsParam(body, echoTop);
  const params = {
    ...toSamplingParams(
      body,
      {
        logprobs: wantLogprobs || undefined,
        topLogprobs: wantLogprobs && top > 0 ? top : undefined,
        bestOf: body.best_of ?? undefined,
      },
      gw.info.maxInputTokenLen,
    ),
    ...(promptLogprobs !== undefined ? { promptLogprobs } : {}),
  };
  const structured = constraintFromFields(body, { allowResponseFormat: true });
  const inputs = prompts(body.prompt);
  const kv = kvTransferFromBody(body.kv_transfer_params);
  if (kv.kvTransfer && inputs.length > 1) throw invalid('kv_transfer_params', 'needs a single prompt');
  const n = params.n ?? 1;
  const requests: GenerateRequest[] = inputs.map((prompt, i) =>
    withConstraintField(
      {
        requestId: inputs.length === 1 ? id : `${id}-${i}`,
        prompt,
        params,
        ...adapterFor(gw, model),
        ...(structured ? { constraint: structured.constraint } : {}),
        ...kv,
        ...pdHeaderFields(ctx),
      },
      structured,
    ),
  );
  const echoes = body.echo
    ? await Promise.all(inputs.map((p) => promptText(gw.engine, p)))
    : inputs.map(() => '');
  const created = Math.floor(Date.now() / 1000);
  // One failing prompt (or the client leaving) cancels the requests of the other prompts.
  const failed = new AbortController();
  const clientGone = clientGoneSignal(ctx);
  const signal = AbortSignal.any([clientGone, failed.signal]);

  if (!body.stream) {
    const answers: CollectedAnswer[] = await Promise.all(requests.map((r) => collect(gw, r, signal))).catch(
      (err: unknown) => {
        failed.abort();
        throw err;
      },
    );
    const usage: Usage = {
      promptTokens: answers.reduce((s, a) => s + a.usage.promptTokens, 0),
      completionTokens: answers.reduce((s, a) => s + a.usage.completionTokens, 0),
      cachedPromptTokens: answers.reduce((s, a) => s + a.usage.cachedPromptTokens, 0),
    };
    ctx.body = {
      id,
      object: 'text_completion',
      created,
      model,
      choices: answers.flatMap((a, pi) =>
        a.choices.map((c) => {
          const prompt = c.finish.promptLogprobs ?? [];
          return {
            index: pi * n + c.index,
            text: echoes[pi] + c.text,
            logprobs: wantLogprobs
              ? completionLogprobs(body.echo ? prompt : [], c.logprobs, echoes[pi].length, top)
              : null,
            finish_reason: openaiFinishReason(c.finish.reason),
            ...(body.prompt_logprobs != null
              ? { prompt_logprobs: vllmPromptLogprobs(prompt, body.prompt_logprobs) }
              : {}),
          };
        }),
      ),
      usage: openaiUsage(usage),
      ...kvTransferResponse(answers.flatMap((a) => a.choices.map((c) => c.finish))),
    };
    return;
  }

  const includeUsage = body.stream_options?.include_usage === true;
  const base = { id, object: 'text_completion', created, model };
  const chunk = (choices: object[]): object =>
    includeUsage ? { ...base, choices, usage: null } : { ...base, choices };
  const usages = new Map<number, Usage>();
  const completionTokens = { total: 0 };
  const echoed = new Set<number>();
  // Every prompt's request starts at once; the stream opens once each has its first event,
  // so that errors found up front (engine validation, overload) keep their status codes.
  await streamSse<Tagged<GenerateEvent>>(ctx, {
    events: mergeAnswers(
      requests.map((r) => events(gw, r, signal)),
      () => failed.abort(),
    ),
    signal: clientGone,
    errorBody: openaiErrorBody,
    onEvent: ({ source: pi, event: ev }, sse) => {
      const index = pi * n + ev.index;
      const prefix = body.echo && !echoed.has(index) ? (echoed.add(index), echoes[pi]) : '';
      if (ev.type === 'token') {
        if (ev.text === '' && prefix === '' && !ev.logprobs?.length) return;
        sse.data(
          chunk([
            {
              index,
              text: prefix + ev.text,
              logprobs: wantLogprobs && ev.logprobs ? completionLogprobs([], ev.logprobs, 0, top) : null,
              finish_reason: null,
            },
          ]),
        );
      } else {
        // The prompt counts once per request; completions add up over its sequences.
        if (!usages.has(pi)) usages.set(pi, ev.usage);
        completionTokens.total += ev.usage.completionTokens;
        sse.data({
          ...chunk([{ index, text: prefix, logprobs: null, finish_reason: openaiFinishReason(ev.reason) }]),
          ...kvTransferResponse([ev]),
        });
      }
    },
    onEnd: (sse) => {
      if (includeUsage) {
        const usage = { promptTokens: 0, cachedPromptTokens: 0, completionTokens: completionTokens.total };
        for (const u of usages.values()) {
          usage.promptTokens += u.promptTokens;
          usage.cachedPromptTokens += u.cachedPromptTokens;
        }
        sse.data({ ...base, choices: [], usage: openaiUsage(usage) });
      }
      sse.data('[DONE]');
    },
  });
}
