/**
 * What the engine core calls for structured output, so that engine-core.ts only marks the
 * points (accept, admit, fork, before a step, after a token, finish): the grammar thread is
 * started by the first constrained request (a server that never sees one never pays for it).
 */
import { invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { Sequence } from '../request-state.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Constraint, GrammarConstraint } from './constraint.js';
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
  async compile(c: GrammarConstraint): Promise<string> {
    return (await this.grammars.compile(c)).key;
  }

  attach(seq: Sequence, key: string): void {
    seq.grammar = this.grammars.createMatcher(key);
  }

  /** A best_of fork samples its first token itself: a fresh matcher of the same grammar. */
  fork(parent: Sequence, child: Sequence): void {
    if (parent.grammar) child.grammar = this.grammars.createMatcher(parent.grammar.key);
  }

  /** Waits for the masks of the constrained sequences that sample in this step. */
  async ready(batch: ScheduledBatch): Promise<void> {
    const pending = batch.items.filter((i) => i.sample && i.seq.grammar).map((i) => i.seq.grammar!.pending);
    if (pending.length > 0) await Promise.all(pending);
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
