/**
 * Pooling on the generation engine (engine/extension.ts): a decoder embedder's or reranker's
 * input is an ordinary request of the engine's intake and scheduler — admitted, queued and
 * prefilled in the scheduler's token budget beside every other request, chunked like any
 * prompt — that never decodes. When its prompt's last step has run, the sampled token is
 * taken (`takeSample`) and dropped; before the next schedule one pass over every such
 * sequence recomputes its last prompt token against the KV it just wrote and returns that
 * token's final-norm state (Qwen3-Embedding's last-token pooling) or its logits (Qwen3-Reranker's
 * yes/no), and the request finishes at once, its blocks freed. The recomputed position writes
 * its KV again (the same values, up to rounding); nothing else reads the sequence's blocks.
 */
import { EngineError } from '../errors.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { StatePass } from '../runner.js';
import type { Sequence } from '../sequence.js';
import { greedySampling } from '../step-plan.js';
import type { StepPlan } from '../../native/native.js';

/** What a pooling request returns: the last token's hidden state, or its logits of `tokens` (in order). */
export type PooledState =
  { readonly kind: 'hidden' } | { readonly kind: 'logits'; readonly tokens: readonly number[] };

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
  /** Sequences whose prompt has run, waiting for the state pass. */
  private ready: PoolingTicket[] = [];
  /** State passes run (each over every sequence whose prompt finished in one step). */
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
    if (!this.states)
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
  }

  takeSample(req: LiveRequest, seq: Sequence): boolean {
    const t = this.expected.get(req.id);
    if (!t || t.seq !== seq) return false;
    this.ready.push(t);
    return true;
  }

  beforeSchedule(): Promise<void> | undefined {
    if (this.ready.length === 0) return undefined; // every step of a generation-only load
    const live = this.ready.filter((t) => !t.seq!.aborted);
    this.ready = [];
    if (live.length === 0) return undefined;
    return this.runPass(live);
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
          t.state.kind === 'hidden' ? row.slice() : Float32Array.from(t.state.tokens, (id) => row[id]!);
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
