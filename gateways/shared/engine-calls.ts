/**
 * Running one engine request from a gateway: collecting a whole answer (non-streaming routes)
 * or walking its events (streaming routes). A sequence that finishes with reason `error`
 * becomes a generation error (424) here, so families only map successful results.
 */
import { randomUUID } from 'node:crypto';
import type { FinishEvent, GenerateEvent, GenerateRequest, TokenLogprob, Usage } from '../../engine/api.js';
import type { GatewayContext } from './gateway-context.js';
import { HttpError } from './http-error.js';
import { noteEngineRequest, noteFinish } from './request-log.js';
import { renameEngineError } from './client-fields.js';
import { tracedGenerate } from './tracing.js';

export function newRequestId(prefix: string): string {
  return `${prefix}-${randomUUID().replace(/-/g, '')}`;
}

export interface CollectedChoice {
  readonly index: number;
  readonly text: string;
  readonly tokenIds: readonly number[];
  /** Per generated token, when logprobs were asked. */
  readonly logprobs: readonly TokenLogprob[];
  readonly finish: FinishEvent;
}

export interface CollectedAnswer {
  /** By choice index. */
  readonly choices: CollectedChoice[];
  readonly usage: Usage;
}

/** Sums the per-sequence usages: the prompt is counted once, completions add up. */
function totalUsage(finishes: readonly FinishEvent[]): Usage {
  if (finishes.length === 0) return { promptTokens: 0, completionTokens: 0, cachedPromptTokens: 0 };
  return {
    promptTokens: finishes[0].usage.promptTokens,
    cachedPromptTokens: finishes[0].usage.cachedPromptTokens,
    completionTokens: finishes.reduce((s, f) => s + f.usage.completionTokens, 0),
  };
}

function failIfError(ev: FinishEvent): void {
  if (ev.reason === 'error') throw new HttpError('generation', ev.error || 'generation failed');
}

export async function collect(
  gw: GatewayContext,
  request: GenerateRequest,
  signal: AbortSignal,
): Promise<CollectedAnswer> {
  const logprobs = new Map<number, TokenLogprob[]>();
  const finishes: FinishEvent[] = [];
  noteEngineRequest(request);
  try {
    for await (const ev of tracedGenerate(gw.engine, request, signal, gw.info.modelName)) {
      if (ev.type === 'token') {
        if (ev.logprobs?.length) {
          const list = logprobs.get(ev.index) ?? [];
          list.push(...ev.logprobs);
          logprobs.set(ev.index, list);
        }
      } else {
        noteFinish(ev);
        failIfError(ev);
        finishes.push(ev);
      }
    }
  } catch (e) {
    throw renameEngineError(request, e);
  }
  finishes.sort((a, b) => a.index - b.index);
  return {
    choices: finishes.map((f) => ({
      index: f.index,
      text: f.text,
      tokenIds: f.tokenIds,
      logprobs: logprobs.get(f.index) ?? [],
      finish: f,
    })),
    usage: totalUsage(finishes),
  };
}

/** The events of a streaming request, with `error` finishes turned into HttpErrors. */
export async function* events(
  gw: GatewayContext,
  request: GenerateRequest,
  signal: AbortSignal,
): AsyncGenerator<GenerateEvent> {
  noteEngineRequest(request);
  try {
    for await (const ev of tracedGenerate(gw.engine, request, signal, gw.info.modelName)) {
      if (ev.type === 'finish') {
        noteFinish(ev);
        failIfError(ev);
      }
      yield ev;
    }
  } catch (e) {
    throw renameEngineError(request, e);
  }
}
