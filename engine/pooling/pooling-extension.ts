/**
 * Pooling on the generation engine (engine/extension.ts): each input of a pooling request is
 * an ordinary request of the engine's intake and scheduler — admitted, queued, prioritised and
 * packed into steps within the scheduler's token budget and batch size beside every other
 * request — that never decodes. Its sequence says what its last step returns
 * (`Sequence.pooled`); the runner computes that chunk apart from the sampled rows and returns
 * the state in the step output (`StepOutput.states`): an encoder's runner runs every prompt
 * whole (encoder-runner.ts, no KV), a decoder's prefills it like any prompt, chunked when
 * long, and runs its last chunk as a state pass that samples nothing and returns the last
 * token's final-norm state (Qwen3-Embedding's last-token pooling) or its logits
 * (Qwen3-Reranker's yes/no; runner.ts). `takeSample` takes that state with the item's
 * placeholder token, and before the next schedule the request finishes, its blocks freed.
 * Each prompt token is computed once; nothing is sampled for a pooling sequence.
 */
import { EngineError } from '../errors.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { PooledOutput, Sequence } from '../sequence.js';

/**
 * What a pooling request returns: the state its last step computes (`pooled`), or of a
 * decoder's logits those of `pick`, in order (Qwen3-Reranker's no and yes).
 */
export interface PooledState {
  readonly pooled: PooledOutput;
  readonly pick?: readonly number[];
}

/** One expected pooling request: what it asks for, then its sequence, then its output. */
export interface PoolingTicket {
  readonly state: PooledState;
  req?: LiveRequest;
  seq?: Sequence;
  /** Set when its last step has run; the request's stream ends after it. */
  output?: Float32Array;
}

export class PoolingExtension implements RequestExtension<PoolingTicket> {
  readonly name = 'pooling';
  private readonly expected = new Map<string, PoolingTicket>();
  /** Sequences admitted in this turn of the event loop, queued together at its end. */
  private arriving: Sequence[] = [];
  /** Sequences whose state is out, finished before the next schedule. */
  private ready: PoolingTicket[] = [];
  /** Steps that returned states (an encoder's passes; a decoder's steps with a state pass). */
  passes = 0;

  constructor(
    /** The runner returns states (an encoder's, or a decoder's on a CPU context). */
    private readonly canPool: boolean,
    /** Width of a decoder's hidden state (0: none, or an encoder: its card says). */
    readonly hiddenSize: number,
    private readonly host: ExtensionHost,
  ) {}

  /**
   * Marks request `id` (not submitted yet) as a pooling one; the ticket holds its output once
   * its stream has ended. `forget` drops a ticket whose request never got admitted.
   */
  expect(id: string, state: PooledState): PoolingTicket {
    if (!this.canPool)
      throw new EngineError('UNIMPLEMENTED', 'pooling on the generation engine needs a CPU context');
    const ticket: PoolingTicket = { state };
    this.expected.set(id, ticket);
    return ticket;
  }

  forget(id: string): void {
    this.expected.delete(id);
  }

  check(request: { requestId?: string | undefined }): PoolingTicket | undefined {
    return request.requestId === undefined ? undefined : this.expected.get(request.requestId);
  }

  plan(plan: RequestPlan, part: PoolingTicket | undefined): void {
    if (!part) return;
    // One choice, nothing streamed, its placeholder token taken: no output of its own.
    plan.buffered = true;
    plan.sampledOnly = false;
    plan.multiToken = false;
  }

  admit(req: LiveRequest, seq: Sequence, part: PoolingTicket | undefined): void {
    if (!part) return;
    part.req = req;
    part.seq = seq;
    seq.pooled = part.state.pooled;
  }

  /**
   * The inputs of one request (and of requests that arrive together) are admitted one by one
   * as the intake takes them; they join the scheduler's queue together once this turn of the
   * event loop is over, so they share the first step instead of the first input running alone.
   */
  beforeQueue(req: LiveRequest, seq: Sequence): boolean {
    const t = this.expected.get(req.id);
    if (!t || t.seq !== seq) return false;
    this.arriving.push(seq);
    if (this.arriving.length === 1) setImmediate(() => this.queueArrived());
    return true;
  }

  private queueArrived(): void {
    const seqs = this.arriving;
    this.arriving = [];
    this.host.enqueue(...seqs.filter((seq) => !seq.aborted)); // a cancelled one never queues
  }

  stepOutput(_batch: ScheduledBatch, out: StepOutput): void {
    if (out.states?.some((x) => x !== undefined)) this.passes++;
  }

  takeSample(req: LiveRequest, seq: Sequence, out: StepOutput, k: number): boolean {
    const t = this.expected.get(req.id);
    if (!t || t.seq !== seq) return false;
    const state = out.states?.[k];
    const pick = t.state.pick;
    if (state) t.output = pick ? Float32Array.from(pick, (id) => state[id]!) : state;
    this.ready.push(t);
    return true;
  }

  beforeSchedule(): void {
    if (this.ready.length === 0) return; // every step of a generation-only load
    const ready = this.ready;
    this.ready = [];
    for (const t of ready) if (!t.seq!.aborted) this.finish(t);
  }

  finishing(_req: LiveRequest | undefined, seq: Sequence): void {
    if (this.ready.length > 0) this.ready = this.ready.filter((t) => t.seq !== seq);
  }

  release(req: LiveRequest): void {
    this.expected.delete(req.id);
  }

  private finish(t: PoolingTicket): void {
    const req = t.req!;
    if (!t.output) {
      const fault = new EngineError('INTERNAL', 'the step returned no state for a pooling input');
      return this.host.abort(req, { message: fault.message, fault });
    }
    req.choices[0]!.reason = 'stop';
    this.host.finishSequence(t.seq!);
    this.host.finish(req);
  }
}
