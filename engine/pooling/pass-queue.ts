/**
 * The pooling scheduler: tokenized inputs of every request wait in one FIFO queue; each pass
 * packs as many as fit the step's budget (the engine's maxPrefillTokens tokens and
 * maxBatchSize inputs, the limits a generation step has), oldest first, so many short inputs
 * of many requests share one forward pass and a long one never waits behind later arrivals.
 * An input is never split across passes: the loader sizes the budget to hold the longest
 * input the model takes. One pass runs at a time (the native context's buffers are the
 * pass's). A request whose signal aborts drops its inputs that have not started.
 */
import { EngineError } from '../errors.js';

/** What a pass computes per input: the pooled vector, every token's state, or the classifier's (or yes/no) logits. */
export type PassOutput = 'pooled' | 'tokens' | 'scores';

export interface PassInput {
  readonly output: PassOutput;
  readonly ids: Int32Array;
  /** 0 for the first text, 1 for a pair's second (cross-encoders); absent: all 0. */
  readonly typeIds?: Int32Array;
}

/** Runs one pass (its inputs all ask for the same output): one output per input, in order. */
export type PassRunner = (inputs: readonly PassInput[]) => Promise<Float32Array[]>;

export interface PassBudget {
  readonly maxTokens: number;
  readonly maxInputs: number;
  /** Inputs waiting at most (past it a request fails RESOURCE_EXHAUSTED). */
  readonly maxQueued: number;
}

interface Waiting {
  readonly input: PassInput;
  readonly ticket: Ticket;
  readonly index: number;
}

/** One request's inputs in the queue. */
interface Ticket {
  readonly outputs: Float32Array[];
  remaining: number;
  cancelled: boolean;
  readonly resolve: (outputs: Float32Array[]) => void;
  readonly reject: (error: unknown) => void;
}

export interface PassStats {
  passes: number;
  inputs: number;
  tokens: number;
}

export class PassQueue {
  private readonly queue: Waiting[] = [];
  private running = false;
  readonly stats: PassStats = { passes: 0, inputs: 0, tokens: 0 };

  constructor(
    private readonly run: PassRunner,
    private readonly budget: PassBudget,
  ) {}

  get waiting(): number {
    return this.queue.length;
  }
  get busy(): boolean {
    return this.running;
  }
  get passes(): number {
    return this.stats.passes;
  }

  /** Queues one request's inputs; resolves with their outputs once every one has run. */
  submit(inputs: readonly PassInput[], signal?: AbortSignal): Promise<Float32Array[]> {
    for (const [i, x] of inputs.entries())
      if (x.ids.length > this.budget.maxTokens)
        throw new EngineError(
          'INTERNAL',
          `pooling input ${i} (${x.ids.length} tokens) exceeds the pass budget ${this.budget.maxTokens}`,
        );
    if (this.queue.length + inputs.length > this.budget.maxQueued)
      throw new EngineError(
        'RESOURCE_EXHAUSTED',
        `the pooling queue is full (${this.queue.length} inputs waiting, at most ${this.budget.maxQueued})`,
      );
    return new Promise<Float32Array[]>((resolve, reject) => {
      const ticket: Ticket = {
        outputs: new Array<Float32Array>(inputs.length),
        remaining: inputs.length,
        cancelled: false,
        resolve,
        reject,
      };
      inputs.forEach((input, index) => this.queue.push({ input, ticket, index }));
      signal?.addEventListener(
        'abort',
        () => {
          if (ticket.remaining === 0) return;
          ticket.cancelled = true;
          for (let i = this.queue.length - 1; i >= 0; i--)
            if (this.queue[i]!.ticket === ticket) this.queue.splice(i, 1);
          reject(new EngineError('CANCELLED', 'the request was cancelled'));
        },
        { once: true },
      );
      void this.pump();
    });
  }

  /** The next pass's inputs: oldest first, of the oldest one's output kind, while they fit the budget (at least one). */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    let tokens = 0;
    while (this.queue.length > 0 && batch.length < this.budget.maxInputs) {
      const next = this.queue[0]!;
      if (
        batch.length > 0 &&
        (tokens + next.input.ids.length > this.budget.maxTokens ||
          next.input.output !== batch[0]!.input.output)
      )
        break;
      tokens += next.input.ids.length;
      batch.push(this.queue.shift()!);
    }
    return batch;
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.take();
        this.stats.passes++;
        this.stats.inputs += batch.length;
        for (const w of batch) this.stats.tokens += w.input.ids.length;
        let outputs: Float32Array[];
        try {
          outputs = await this.run(batch.map((w) => w.input));
        } catch (e) {
          // A failed pass fails the requests it carried, not the queue.
          const failed = new Set(batch.map((w) => w.ticket));
          for (const t of failed) this.fail(t, e);
          continue;
        }
        batch.forEach((w, i) => {
          const t = w.ticket;
          if (t.cancelled) return;
          t.outputs[w.index] = outputs[i]!;
          if (--t.remaining === 0) t.resolve(t.outputs);
        });
      }
    } finally {
      this.running = false;
    }
  }

  private fail(ticket: Ticket, e: unknown): void {
    if (ticket.cancelled) return;
    ticket.cancelled = true;
    for (let i = this.queue.length - 1; i >= 0; i--)
      if (this.queue[i]!.ticket === ticket) this.queue.splice(i, 1);
    const message = e instanceof Error ? e.message : String(e);
    ticket.reject(
      e instanceof EngineError ? e : new EngineError('INTERNAL', `pooling pass failed: ${message}`),
    );
  }
}
