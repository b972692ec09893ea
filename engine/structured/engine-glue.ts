/**
 * What the engine core calls for structured output, so that engine-core.ts only marks the
 * points (accept, admit, fork, before a step, after a token, finish): the grammar thread is
 * started by the first constrained request (a server that never sees one never pays for it).
 */
import { invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { Sequence } from '../request-state.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Constraint } from './constraint.js';
import { GrammarService } from './grammar-service.js';
import { checkConstraint } from './validate.js';

export class StructuredOutput {
  private service: GrammarService | null = null;

  constructor(
    private readonly tokenizer: EngineTokenizer,
    /** Rows of the model's logits. */
    private readonly vocabSize: number,
    private readonly compileTimeoutMs?: number,
  ) {}

  /** The synchronous checks of a request's constraint. */
  check(c: unknown): Constraint {
    const constraint = checkConstraint(c);
    if (!this.tokenizer.grammarVocab)
      throw invalidArgument('constraint', 'this engine has no tokenizer vocabulary to enforce it with');
    return constraint;
  }

  get grammars(): GrammarService {
    // A grammar thread that died fails its requests; the next request starts a fresh one.
    if (this.service?.dead) this.service = null;
    this.service ??= new GrammarService({
      vocab: this.tokenizer.grammarVocab!(),
      vocabSize: this.vocabSize,
      stopTokenIds: this.tokenizer.eosTokenIds,
      ...(this.compileTimeoutMs !== undefined ? { compileTimeoutMs: this.compileTimeoutMs } : {}),
    });
    return this.service;
  }

  /** Compiles off the event loop; resolves to the grammar's cache key. */
  async compile(c: Constraint): Promise<string> {
    return (await this.grammars.compile(c)).key;
  }

  attach(seq: Sequence, key: string): void {
    seq.grammar = this.grammars.createMatcher(key);
  }

  /** A best_of fork samples its first token itself: a fresh matcher of the same grammar. */
  fork(parent: Sequence, child: Sequence): void {
    if (parent.grammar) child.grammar = this.grammars.createMatcher(parent.grammar.key);
  }

  /**
   * Overlap the masks with the forward pass (the default). Off: the engine awaits every mask
   * before it starts the step (the benchmark's A/B switch).
   */
  overlapMasks = true;
  /** Steps that started before their masks were ready (the benchmark reports it). */
  lateSteps = 0;

  /**
   * Before a step: undefined when every mask the step needs is there (an unconstrained batch
   * pays nothing); else `{ masks }`, the promise of the missing ones, which the runner hands
   * to a step that starts its forward pass at once and samples once the masks are in. (An
   * object, not the promise itself: an async function would wait for a returned promise.)
   */
  async beforeStep(batch: ScheduledBatch): Promise<{ readonly masks: Promise<void> } | undefined> {
    let pending: Promise<void>[] | null = null;
    for (const { sample, seq } of batch.items) {
      const g = seq.grammar;
      if (sample && g && g.mask === null && g.error === null && !g.terminated)
        (pending ??= []).push(g.pending);
    }
    if (!pending) return undefined;
    const masks = Promise.all(pending).then(() => {});
    if (this.overlapMasks) {
      this.lateSteps++;
      return { masks };
    }
    await masks;
    return undefined;
  }

  /** Feeds a sampled token to the sequence's matcher; returns an error if it is already broken. */
  afterToken(seq: Sequence, token: number): string | null {
    const g = seq.grammar;
    if (!g) return null;
    if (g.error !== null) return g.error;
    if (!g.terminated) this.grammars.accept(g, token);
    return null;
  }

  release(seqs: readonly Sequence[]): void {
    for (const s of seqs) {
      if (s.grammar) this.grammars.free(s.grammar);
      s.grammar = null;
    }
  }

  async close(): Promise<void> {
    await this.service?.close();
  }
}
