/**
 * Speculative decoding as a request extension (engine/extension.ts): the speculator proposes
 * drafts before the scheduler and learns from each verify step, with the engine's limits on
 * how many draft tokens a sequence may take (its request's, and none for a request whose plan
 * takes one token per step), and structured output's cut of drafts at the first token the
 * grammar refuses.
 */
import type { EngineStatus } from '../types.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import { checkGrammarDrafts } from './grammar-drafts.js';
import type { Proposer } from './proposer.js';
import { Speculator, type SpeculatorOptions } from './speculator.js';

export interface SpeculationConfig {
  readonly proposer: Proposer;
  readonly options: SpeculatorOptions;
}

export class SpeculationExtension implements RequestExtension {
  readonly name = 'speculative decoding';
  readonly speculator: Speculator;
  /** Requests whose plan takes one token per step (never drafts). */
  private readonly oneTokenSteps = new WeakSet<LiveRequest>();

  constructor(
    config: SpeculationConfig,
    private readonly host: ExtensionHost,
    private readonly maxSeqLen: number,
    maxBatchSize?: number,
  ) {
    this.speculator = new Speculator(config.proposer, config.options, {
      room: (seq) => this.room(seq),
      ...(maxBatchSize !== undefined ? { slots: maxBatchSize } : {}),
      checkDrafts: checkGrammarDrafts,
    });
  }

  admit(req: LiveRequest, _seq: Sequence, _part: unknown, plan: Readonly<RequestPlan>): void {
    if (!plan.multiToken) this.oneTokenSteps.add(req);
  }

  beforeSchedule(running: readonly Sequence[], waiting: number): Promise<void> | void {
    return this.speculator.propose(running, waiting);
  }

  afterStep(batch: ScheduledBatch, out: StepOutput): void {
    this.speculator.verified(batch, out);
  }

  /** A proposer's own state (a draft model's pages) goes back as soon as a sequence ends. */
  finishing(_req: LiveRequest | undefined, seq: Sequence): void {
    this.speculator.release(seq);
  }

  status(): Pick<EngineStatus, 'specDecode'> {
    return { specDecode: this.speculator.metrics.snapshot() };
  }

  close(): Promise<void> {
    return this.speculator.close();
  }

  private room(seq: Sequence): number {
    const req = this.host.request(seq.requestId);
    return draftRoom(seq, req, this.maxSeqLen, req !== undefined && this.oneTokenSteps.has(req));
  }
}

/**
 * Draft tokens `seq` may take: its request's max tokens and maxSeqLen, less the token sampled
 * after them. `oneTokenSteps`: the request's plan takes one token per step (a prefill-side
 * request ends at its first token; beam search chooses among one step's candidates).
 */
function draftRoom(
  seq: Sequence,
  req: LiveRequest | undefined,
  maxSeqLen: number,
  oneTokenSteps: boolean,
): number {
  const c = req?.choices[seq.index];
  if (!req || !c || c.reason !== null || oneTokenSteps) return 0;
  // min_tokens: end tokens are suppressed at every position of a step, so a verify step must
  // not reach past the minimum. No drafts.
  if (seq.numOutput < (seq.sampling.minTokens ?? 0)) return 0;
  // The request's own cap (numSpeculativeTokens; 0: it does not speculate, so it is not
  // even looked up).
  const cap = req.params.numSpeculativeTokens ?? Infinity;
  return Math.min(req.maxNew - c.tokenIds.length - 1, maxSeqLen - seq.tokens.length - 1, cap);
}
