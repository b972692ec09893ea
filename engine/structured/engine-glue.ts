/**
 * What the engine calls for structured output (request intake, the step loop and the output
 * processor), so that they only mark the points (accept, admit, fork, before a step, after a
 * token, finish): the grammar thread is started by the first constrained request (a server
 * that never sees one never pays for it).
 */
import { availableParallelism } from 'node:os';
import type { ChoiceOutput } from '../choice-output.js';
import { invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { Sequence } from '../sequence.js';
import type { LateMasks } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { CheckedConstraint, GrammarConstraint } from './constraint.js';
import type { GrammarBackend } from './grammar-backend.js';
import { GrammarService } from './grammar-service.js';
import { forcedTokens, type JumpTokenizer } from './jump-forward.js';
import { checkConstraint } from './validate.js';

/** Grammar keys whose checks are remembered (see `StructuredOutput.checked`). */
const CHECKED_KEYS = 4096;

export class StructuredOutput {
  private service: GrammarBackend | null = null;
  /** Jump-forward (jump-forward.ts); needs a tokenizer that encodes on the event loop. */
  private readonly jumpTokenizer: JumpTokenizer | null;
  /** Jump-forward on (the default where the tokenizer allows it); the benchmark's A/B switch. */
  jumpForward: boolean;
  /** Tokens appended by jump-forward (the benchmark reports it). */
  jumpedTokens = 0;
  /** Choices sampled again after their output failed its check (choice-checks.ts). */
  resampledChoices = 0;
  /** Choices that failed the check on every attempt (their request failed). */
  failedChecks = 0;

  constructor(
    private readonly tokenizer: EngineTokenizer,
    /** Rows of the model's logits. */
    private readonly vocabSize: number,
    private readonly compileTimeoutMs?: number,
    /** Threads of the native context (undefined: one per core). */
    nativeThreads?: number,
  ) {
    const cores = availableParallelism();
    this.overlapMasks = cores > (nativeThreads ?? cores);
    const t = tokenizer;
    this.jumpTokenizer =
      t.encode && t.isSpecial
        ? {
            encode: t.encode.bind(t),
            decode: (ids) => t.decode(ids),
            tokenText: (id) => t.tokenText(id),
            isSpecial: t.isSpecial.bind(t),
          }
        : null;
    this.jumpForward = this.jumpTokenizer !== null;
  }

  /** The synchronous checks of a request's constraint. */
  check(c: unknown): CheckedConstraint {
    const constraint = checkConstraint(c);
    if (!this.tokenizer.grammarVocab)
      throw invalidArgument('constraint', 'this engine has no tokenizer vocabulary to enforce it with');
    return constraint;
  }

  /** The grammar backend (xgrammar on its own thread, the one implementation). */
  get grammars(): GrammarBackend {
    // A grammar thread that died fails its requests; the next request starts a fresh one.
    if (this.service?.dead) this.service = null;
    // Jump-forward encodes on the event loop: start that tokenizer's thread now, unawaited.
    if (!this.service && this.jumpTokenizer) this.tokenizer.prepareEncode?.();
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
    const r = await this.grammars.compile(c);
    const checks = c.kind === 'structural_tag' && c.checks?.length ? c.checks : null;
    if (r.checked || checks) this.checked.set(r.key, checks ?? 'document');
    else this.checked.delete(r.key);
    while (this.checked.size > CHECKED_KEYS) this.checked.delete(this.checked.keys().next().value!);
    return r.key;
  }

  /**
   * Grammars (by key) whose outputs are checked when a choice ends: 'document' (a JSON Schema
   * the grammar enforces only in part) or the tools whose calls are. Kept for the most recent
   * keys; a request holds its key from compile to admission, well within them.
   */
  private readonly checked = new Map<string, 'document' | readonly { name: string; schema: string }[]>();

  /**
   * Whether a request on grammar `key` has its output checked when a choice ends: it is then
   * held back and sent once checked (streamed as one delta), since a choice that fails the
   * check is sampled again (see `verify`).
   */
  holdsOutput(key: string): boolean {
    return this.checked.has(key);
  }

  /**
   * At the end of choice `c` of `seq` (finished by the grammar): null when its output stands;
   * else why not — the document (or a tool call's arguments) does not satisfy the client's
   * schema in what the grammar could not enforce. Where nothing needs checking, null at once.
   */
  async verify(seq: Sequence, c: ChoiceOutput): Promise<string | null> {
    const key = seq.grammar?.key;
    const what = key === undefined ? undefined : this.checked.get(key);
    if (what === undefined || key === undefined) return null;
    if (what === 'document') return this.grammars.checkDocument(key, c.text);
    for (const call of c.chatResult()?.toolCalls ?? []) {
      const check = what.find((t) => t.name === call.function.name);
      if (!check) continue;
      const invalid = await this.grammars.checkJson(check.schema, call.function.arguments);
      if (invalid !== null) return `the arguments of ${call.function.name}: ${invalid}`;
    }
    return null;
  }

  /**
   * `jump`: the request may use jump-forward. Off where appended tokens would need what they
   * do not have: a logprob (requests asking for logprobs; best_of ranks by cumulative logprob).
   */
  attach(seq: Sequence, key: string, jump: boolean): void {
    seq.grammar = this.grammars.createMatcher(key, jump && this.jumpForward);
  }

  /**
   * A fork's matcher: a fresh one of the same grammar, fed the child's output so far — none
   * for a best_of fork (it samples its first token itself), a beam's whole history for a beam
   * search's fork.
   */
  fork(parent: Sequence, child: Sequence): void {
    const g = parent.grammar;
    if (!g) return;
    const m = this.grammars.createMatcher(g.key, g.jumpForward);
    const output = child.tokens.slice(child.promptLen);
    if (output.length > 0) m.accept(output);
    child.grammar = m;
  }

  /**
   * Jump-forward: the tokens the grammar forces after `token` (just sampled for `seq`), to
   * append without sampling. Call before `afterTokens`, which moves the matcher on. `jump`:
   * the string forced where `token` was sampled, when that is not the matcher's state (after
   * accepted draft tokens, speculative decoding).
   */
  forcedAfter(seq: Sequence, token: number, jump?: string): number[] {
    const g = seq.grammar;
    const forced = jump ?? g?.jump ?? '';
    if (!g?.jumpForward || !this.jumpTokenizer || g.error !== null || g.terminated || forced === '')
      return [];
    const tokens = forcedTokens(this.jumpTokenizer, token, forced);
    this.jumpedTokens += tokens.length;
    return tokens;
  }

  /**
   * Overlap the masks with the forward pass. Off: the engine awaits every mask before it
   * starts the step. On by default only where a core is left beside the native step's
   * threads: its fork-join pool spins, so a grammar thread (and the event loop handing over
   * the masks) running on one of its cores slows the whole forward pass more than the wait
   * it saves (measured on a 2-core machine, docs/benchmarks.md). The benchmark's A/B switch.
   */
  overlapMasks: boolean;
  /** Steps that started before their masks were ready (the benchmark reports it). */
  lateSteps = 0;
  /**
   * Per step that samples a constrained sequence: ms the step's critical path waited for
   * masks (awaited before the step, or, overlapped, waited by sampling after the forward
   * pass). The benchmark reports it.
   */
  readonly maskStalls: number[] = [];

  /**
   * Before a step: undefined when every mask the step needs is there (an unconstrained batch
   * pays nothing); else `{ masks }`, the promise of the missing ones, which the runner hands
   * to a step that starts its forward pass at once and samples once the masks are in. (An
   * object, not the promise itself: an async function would wait for a returned promise.)
   * With `overlapMasks` off, it awaits them itself and returns undefined.
   */
  async beforeStep(batch: ScheduledBatch): Promise<LateMasks | undefined> {
    let pending: Promise<void>[] | null = null;
    let constrained = false;
    for (const { sample, seq } of batch.items) {
      const g = seq.grammar;
      if (!sample || !g) continue;
      constrained = true;
      if (g.mask === null && g.error === null && !g.terminated) (pending ??= []).push(g.pending);
    }
    if (!pending) {
      if (constrained) this.stall(0);
      return undefined;
    }
    const masks = Promise.all(pending).then(() => {});
    if (this.overlapMasks) {
      this.lateSteps++;
      return { masks, waited: (ms) => this.stall(ms) };
    }
    const t0 = performance.now();
    await masks;
    this.stall(performance.now() - t0);
    return undefined;
  }

  private stall(ms: number): void {
    this.maskStalls.push(ms);
    if (this.maskStalls.length > 100_000) this.maskStalls.splice(0, 50_000);
  }

  /**
   * Feeds a sampled token (and those jump-forward appended) to the sequence's matcher;
   * returns an error if it is already broken.
   */
  afterTokens(seq: Sequence, tokens: readonly number[]): string | null {
    const g = seq.grammar;
    if (!g) return null;
    if (g.error !== null) return g.error;
    if (!g.terminated) g.accept(tokens);
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
