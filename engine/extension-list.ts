/**
 * The walks over the engine's request extensions (extension.ts says when each hook runs and
 * what it may do): one method per hook, over the extensions that implement it, in list order.
 * Intake, the step loop and the output processor call these and nothing of a feature's own.
 */
import type { ChoiceOutput } from './choice-output.js';
import { joinLateMasks, type PlanContext, type RequestExtension, type RequestPlan } from './extension.js';
import type { LiveRequest } from './live-request.js';
import type { LateMasks, StepOutput } from './runner.js';
import type { ResolvedParams } from './sampling-params.js';
import type { ScheduledBatch } from './scheduler.js';
import type { Sequence } from './sequence.js';
import type { FinishEvent, GenerateRequest, PromptInput } from './types.js';

type Hook = Exclude<keyof RequestExtension, 'name'>;
type With<K extends Hook> = RequestExtension & Required<Pick<RequestExtension, K>>;

const NONE: readonly number[] = [];

/** Each extension's part of one request, from `check` to `admit`. */
export type RequestParts = ReadonlyMap<RequestExtension, unknown>;

export class ExtensionList {
  private readonly lists = new Map<Hook, readonly RequestExtension[]>();
  /** The extensions of the hooks the output processor calls per sampled item. */
  private readonly takers: readonly With<'takeSample'>[];
  private readonly forcers: readonly With<'forcedAfter'>[];
  private readonly feeders: readonly With<'afterTokens'>[];

  constructor(readonly all: readonly RequestExtension[]) {
    this.takers = this.with('takeSample');
    this.forcers = this.with('forcedAfter');
    this.feeders = this.with('afterTokens');
  }

  /** The extensions with hook `k` (listed once per hook). */
  private with<K extends Hook>(k: K): readonly With<K>[] {
    let list = this.lists.get(k);
    if (!list) this.lists.set(k, (list = this.all.filter((e) => e[k] !== undefined)));
    return list as readonly With<K>[];
  }

  check(request: GenerateRequest, params: ResolvedParams): RequestParts {
    const parts = new Map<RequestExtension, unknown>();
    for (const e of this.with('check')) {
      const part = e.check(request, params);
      if (part !== undefined) parts.set(e, part);
    }
    return parts;
  }

  /** The prompt as the tokenizer reads it, once each extension with a part rewrote it (list order). */
  promptInput(prompt: PromptInput, parts: RequestParts): PromptInput {
    for (const [e, part] of parts) if (e.promptInput) prompt = e.promptInput(prompt, part);
    return prompt;
  }

  /** A rendered chat prompt's text once each extension with a part rewrote it (list order). */
  promptText(text: string, parts: RequestParts): string {
    for (const [e, part] of parts) if (e.promptText) text = e.promptText(text, part);
    return text;
  }

  prepare(parts: RequestParts): Promise<void>[] {
    const pending: Promise<void>[] = [];
    for (const [e, part] of parts) if (e.prepare) pending.push(e.prepare(part));
    return pending;
  }

  /** The prompt's tokens once each extension with a part rewrote them (list order). */
  prompt(ids: number[], parts: RequestParts): number[] {
    for (const [e, part] of parts) if (e.prompt) ids = e.prompt(ids, part);
    return ids;
  }

  plan(plan: RequestPlan, parts: RequestParts, ctx: PlanContext): void {
    for (const e of this.with('plan')) e.plan(plan, parts.get(e), ctx);
  }

  admit(req: LiveRequest, seq: Sequence, parts: RequestParts, plan: Readonly<RequestPlan>): void {
    for (const e of this.with('admit')) e.admit(req, seq, parts.get(e), plan);
  }

  /** True when an extension took the sequence to queue it itself. */
  beforeQueue(req: LiveRequest, seq: Sequence): boolean {
    for (const e of this.with('beforeQueue')) if (e.beforeQueue(req, seq)) return true;
    return false;
  }

  /** Undefined when no extension has to be waited for (the loop then goes on at once). */
  beforeSchedule(running: readonly Sequence[], waiting: number): Promise<void> | undefined {
    let pending: Promise<void>[] | undefined;
    for (const e of this.with('beforeSchedule')) {
      const p = e.beforeSchedule(running, waiting);
      if (p) (pending ??= []).push(p);
    }
    return pending && Promise.all(pending).then(() => {});
  }

  fork(parent: Sequence, child: Sequence): void {
    for (const e of this.with('fork')) e.fork(parent, child);
  }

  /** Undefined when no extension has anything to wait for (the step starts at once). */
  beforeStep(batch: ScheduledBatch): Promise<LateMasks | undefined> | undefined {
    let pending: Promise<LateMasks | undefined>[] | undefined;
    for (const e of this.with('beforeStep')) {
      const p = e.beforeStep(batch);
      if (p) (pending ??= []).push(p);
    }
    if (!pending) return undefined;
    return Promise.all(pending).then((late) => joinLateMasks(late.filter((l) => l !== undefined)));
  }

  stepOutput(batch: ScheduledBatch, out: StepOutput): void {
    for (const e of this.with('stepOutput')) e.stepOutput(batch, out);
  }

  takeSample(req: LiveRequest, seq: Sequence, out: StepOutput, k: number): boolean {
    for (const e of this.takers) if (e.takeSample(req, seq, out, k)) return true;
    return false;
  }

  forcedAfter(seq: Sequence, token: number, accepted: number): readonly number[] {
    for (const e of this.forcers) {
      const forced = e.forcedAfter(seq, token, accepted);
      if (forced.length > 0) return forced;
    }
    return NONE;
  }

  /** Every extension sees the tokens; the first error, or null. */
  afterTokens(seq: Sequence, tokens: readonly number[]): string | null {
    let error: string | null = null;
    for (const e of this.feeders) {
      const failed = e.afterTokens(seq, tokens);
      error ??= failed;
    }
    return error;
  }

  firstToken(req: LiveRequest, choice: ChoiceOutput): void {
    for (const e of this.with('firstToken')) e.firstToken(req, choice);
  }

  /** True when an extension holds the request's finish. */
  choiceEnded(req: LiveRequest, seq: Sequence, choice: ChoiceOutput): boolean {
    let held = false;
    for (const e of this.with('choiceEnded')) if (e.choiceEnded(req, seq, choice)) held = true;
    return held;
  }

  holds(req: LiveRequest): boolean {
    for (const e of this.with('holds')) if (e.holds(req)) return true;
    return false;
  }

  finishing(req: LiveRequest | undefined, seq: Sequence): void {
    for (const e of this.with('finishing')) e.finishing(req, seq);
  }

  afterStep(batch: ScheduledBatch, out: StepOutput): void {
    for (const e of this.with('afterStep')) e.afterStep(batch, out);
  }

  /** What the finish events wait for; undefined: nothing. */
  beforeFinalize(req: LiveRequest): Promise<void> | undefined {
    let waits: Promise<void>[] | undefined;
    for (const e of this.with('beforeFinalize')) {
      const w = e.beforeFinalize(req);
      if (w) (waits ??= []).push(w);
    }
    if (!waits) return undefined;
    return waits.length === 1 ? waits[0] : Promise.all(waits).then(() => {});
  }

  finishFields(req: LiveRequest): Partial<FinishEvent> {
    let fields: Partial<FinishEvent> = {};
    for (const e of this.with('finishFields')) fields = { ...fields, ...e.finishFields(req) };
    return fields;
  }

  release(req: LiveRequest): void {
    for (const e of this.with('release')) e.release(req);
  }

  /** True when `id` named something of an extension's. */
  cancel(id: string, req: LiveRequest | undefined): boolean {
    let claimed = false;
    for (const e of this.with('cancel')) if (e.cancel(id, req)) claimed = true;
    return claimed;
  }

  async close(): Promise<void> {
    for (const e of this.with('close')) await e.close();
  }
}
