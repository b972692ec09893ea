/**
 * Pooling on the generation engine (engine/extension.ts): each input of a pooling request is
 * an ordinary request of the engine's intake and scheduler — admitted, queued, prioritised and
 * packed into steps within the scheduler's token budget and batch size beside every other
 * request — that never decodes. Two kinds of runner:
 *
 *  - an encoder's (encoder-runner.ts, no KV): the step that runs the whole prompt returns the
 *    sequence's state itself (`StepOutput.states`); `takeSample` takes it with the placeholder
 *    token, and before the next schedule the request finishes.
 *  - a decoder's (Qwen3-Embedding, Qwen3-Reranker): the prompt is prefilled like any other,
 *    chunked when long; when its last step has run, the sampled token is taken and dropped,
 *    and before the next schedule one state pass over every such sequence recomputes its last
 *    prompt token against the KV it just wrote and returns that token's final-norm state
 *    (last-token pooling) or its logits (yes/no), and the request finishes, its blocks freed.
 *    The recomputed position writes its KV again (the same values, up to rounding); nothing
 *    else reads the sequence's blocks.
 */
import { EngineError } from '../errors.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { StatePass, StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { PooledOutput, Sequence } from '../sequence.js';
import { greedySampling } from '../step-plan.js';
import type { StepPlan } from '../../native/native.js';

/**
 * What a pooling request returns: a decoder's last token's hidden state, or its logits of
 * `tokens` (in order); or what an encoder's step computes (`step`: the runner returns it).
 */
export type PooledState =
  | { readonly kind: 'hidden' }
  | { readonly kind: 'logits'; readonly tokens: readonly number[] }
  | { readonly kind: 'step'; readonly pooled: PooledOutput };

/** One expected pooling request: what it asks for, then its sequence, then its output. */
export interface PoolingTicket {
  readonly state: PooledState;
  req?: LiveRequest;
  seq?: Sequence;
  /** Set when the pass has run; the request's stream ends after it. */
  output?: Float32Array;
}

export class PoolingExtension implements RequestExtension<PoolingTicket> {
  readonly name = 'pooling';
  private readonly expected = new Map<string, PoolingTicket>();
  /** Sequences admitted in this turn of the event loop, queued together at its end. */
  private arriving: Sequence[] = [];
  /** Sequences whose prompt has run, waiting for the state pass. */
  private ready: PoolingTicket[] = [];
  /** Passes that returned states: an encoder's steps, a decoder's state passes (each over every sequence whose prompt finished in one step). */
  passes = 0;

  constructor(
    private readonly states: StatePass | undefined,
    private readonly blockSize: number,
    private readonly host: ExtensionHost,
  ) {}

  /** Width of the hidden state a pooling request returns; 0: this engine's runner cannot pool (not a CPU context). */
  get hiddenSize(): number {
    return this.states?.hiddenSize ?? 0;
  }

  /**
   * Marks request `id` (not submitted yet) as a pooling one; the ticket holds its output once
   * its stream has ended. `forget` drops a ticket whose request never got admitted.
   */
  expect(id: string, state: PooledState): PoolingTicket {
    if (state.kind !== 'step' && !this.states)
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
    // One choice, nothing streamed, its one sampled token taken: no output of its own.
    plan.buffered = true;
    plan.sampledOnly = false;
    plan.multiToken = false;
  }

  admit(req: LiveRequest, seq: Sequence, part: PoolingTicket | undefined): void {
    if (!part) return;
    part.req = req;
    part.seq = seq;
    if (part.state.kind === 'step') seq.pooled = part.state.pooled;
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

  /** A step's states (an encoder's) are passes too. */
  stepOutput(_batch: ScheduledBatch, out: StepOutput): void {
    if (out.states?.some((x) => x !== undefined)) this.passes++;
  }

  takeSample(req: LiveRequest, seq: Sequence, out: StepOutput, k: number): boolean {
    const t = this.expected.get(req.id);
    if (!t || t.seq !== seq) return false;
    if (t.state.kind === 'step') t.output = out.states?.[k];
    this.ready.push(t);
    return true;
  }

  beforeSchedule(): Promise<void> | undefined {
    if (this.ready.length === 0) return undefined; // every step of a generation-only load
    const live = this.ready.filter((t) => !t.seq!.aborted);
    this.ready = [];
    // An encoder's step returned its state: it finishes now; a decoder's needs the state pass.
    const pending = live.filter((t) => t.state.kind !== 'step');
    for (const t of live) if (t.state.kind === 'step') this.finishStep(t);
    if (pending.length === 0) return undefined;
    return this.runPass(pending);
  }

  private finishStep(t: PoolingTicket): void {
    if (t.output) return this.finish(t);
    const fault = new EngineError('INTERNAL', 'the encoder step returned no state for a pooling input');
    this.host.abort(t.req!, { message: fault.message, fault });
  }

  finishing(_req: LiveRequest | undefined, seq: Sequence): void {
    this.ready = this.ready.filter((t) => t.seq !== seq);
  }

  release(req: LiveRequest): void {
    this.expected.delete(req.id);
  }

  /** One state pass per kind of output among `tickets`; then each request finishes. */
  private async runPass(tickets: readonly PoolingTicket[]): Promise<void> {
    const hidden = tickets.filter((t) => t.state.kind === 'hidden');
    const logits = tickets.filter((t) => t.state.kind === 'logits');
    for (const group of [hidden, logits]) {
      if (group.length === 0) continue;
      const plan = lastTokenPlan(
        group.map((t) => t.seq!),
        this.blockSize,
        this.states!.pagesPerBlock,
      );
      let out: Float32Array;
      try {
        out = await (group === hidden ? this.states!.hidden(plan) : this.states!.logits(plan));
      } catch (e) {
        const fault = new EngineError('INTERNAL', `pooling pass failed: ${(e as Error).message}`);
        for (const t of group) this.host.abort(t.req!, { message: fault.message, fault });
        continue;
      }
      this.passes++;
      const width = out.length / group.length;
      group.forEach((t, i) => {
        const row = out.subarray(i * width, (i + 1) * width);
        t.output =
          t.state.kind === 'logits' ? Float32Array.from(t.state.tokens, (id) => row[id]!) : row.slice();
        this.finish(t);
      });
    }
  }

  private finish(t: PoolingTicket): void {
    const req = t.req!;
    if (t.seq!.aborted) return;
    req.choices[0]!.reason = 'stop';
    this.host.finishSequence(t.seq!);
    this.host.finish(req);
  }
}

/**
 * The state pass's plan: each sequence's last prompt token at its position, reading the KV of
 * the tokens before it from the sequence's own blocks. Nothing is sampled.
 */
function lastTokenPlan(seqs: readonly Sequence[], blockSize: number, pagesPerBlock: number): StepPlan {
  const S = seqs.length;
  const tokens = new Int32Array(S);
  const positions = new Int32Array(S);
  const seqTokenOffsets = Int32Array.from({ length: S + 1 }, (_, i) => i);
  const blockTableOffsets = new Int32Array(S + 1);
  const tables: number[] = [];
  seqs.forEach((seq, i) => {
    const last = seq.promptLen - 1;
    tokens[i] = seq.tokens[last]!;
    positions[i] = last;
    const entries = Math.ceil(seq.promptLen / blockSize) * pagesPerBlock;
    // A page released outside a sliding window is never read; page 0 stands in (step-plan.ts).
    for (let j = 0; j < entries; j++) tables.push(Math.max(0, seq.blockTable[j]!));
    blockTableOffsets[i + 1] = tables.length;
  });
  return {
    tokens,
    positions,
    seqTokenOffsets,
    blockTableOffsets,
    blockTables: Int32Array.from(tables),
    ...greedySampling(S),
    sample: new Uint8Array(S),
    returnLogits: 'none',
  };
}
