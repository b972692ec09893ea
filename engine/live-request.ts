/**
 * A request the engine holds, from admission to its finish events, and the table of them.
 * Request intake (request-intake.ts) claims an id and admits; the step loop (engine-core.ts)
 * schedules its sequences; the output processor (output-processor.ts) streams its events
 * and forgets it when every choice has finished. `drain()` waits on the table.
 */
import type { AdapterEntry } from './adapters/manager.js';
import type { ChoiceOutput } from './choice-output.js';
import { invalidArgument, type EngineError } from './errors.js';
import type { EventQueue } from './event-queue.js';
import type { RequestSpans } from './request-spans.js';
import type { ResolvedParams } from './sampling-params.js';
import type { Sequence } from './sequence.js';
import type { GenerateEvent } from './types.js';

export interface LiveRequest {
  readonly id: string;
  readonly params: ResolvedParams;
  readonly promptLen: number;
  readonly maxNew: number;
  readonly arrival: number;
  readonly queue: EventQueue<GenerateEvent>;
  /** Its sequences: the first, then the ones a best_of fork adds. */
  readonly seqs: Sequence[];
  /** One per choice, by sequence index (an extension may replace them when the request ends). */
  readonly choices: ChoiceOutput[];
  /** A new choice output of this request (its stop rules, chat parsing and seed + index). */
  readonly makeChoice: (index: number) => ChoiceOutput;
  /**
   * Events are held back until the request finishes (RequestPlan.buffered: the best n of
   * best_of are sent then, or what an extension decides only at the end).
   */
  readonly buffered: boolean;
  /** The finish sends the best `n` choices by cumulative logprob (best_of > n). */
  readonly rankChoices: boolean;
  firstScheduled: number;
  firstToken: number;
  cachedPromptTokens: number;
  detachSignal: () => void;
  /** Live queue/prefill/decode tracing spans; undefined when the caller traces nothing. */
  readonly spans: RequestSpans | undefined;
  readonly adapter: AdapterEntry | null;
  /** A server fault ended it (engine/step-fault.ts): the stream ends with this error, no finish events. */
  fault?: EngineError;
}

/** Live requests by id, the ids claimed by requests still being tokenized, and drain waiters. */
export class RequestTable {
  private readonly live = new Map<string, LiveRequest>();
  /** Ids of accepted requests whose prompts are being tokenized (not yet live). */
  private readonly pending = new Set<string>();
  private drainWaiters: (() => void)[] = [];

  get(id: string): LiveRequest | undefined {
    return this.live.get(id);
  }

  /** The live requests, in admission order (a copy: callers may finish requests while iterating). */
  all(): LiveRequest[] {
    return [...this.live.values()];
  }

  ids(): string[] {
    return [...this.live.keys()];
  }

  /** Refuses an id that a live request, or one being tokenized, holds. */
  checkFree(id: string): void {
    if (this.live.has(id) || this.pending.has(id))
      throw invalidArgument('request_id', `'${id}' is already in use by a live request`);
  }

  /** Claims a (checked) id while its request is tokenized, so no second request takes it. */
  claim(id: string): void {
    this.pending.add(id);
  }

  /** Drops the claim once the request is tokenized (or failed). */
  release(id: string): void {
    this.pending.delete(id);
  }

  /** An admitted request becomes live. */
  add(req: LiveRequest): void {
    this.live.set(req.id, req);
  }

  /** Forgets a finished request; false when it was already forgotten. */
  remove(id: string): boolean {
    return this.live.delete(id);
  }

  get empty(): boolean {
    return this.live.size === 0 && this.pending.size === 0;
  }

  /** Resolves once no request is live or being tokenized. */
  whenEmpty(): Promise<void> {
    if (this.empty) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Wakes `whenEmpty` waiters if the table has emptied. */
  wake(): void {
    if (!this.empty) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}
