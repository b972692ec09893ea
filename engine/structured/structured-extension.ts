/**
 * Structured output as a request extension (engine/extension.ts): a request's constraint (the
 * client's, or the one its tool_choice forces) is checked before any work and compiled on the
 * grammar thread while the prompt is tokenized; each of its sequences gets a matcher (forks a
 * copy), each step its masks (late ones overlap the forward pass), sampled tokens move the
 * matcher on, and jump-forward appends what the grammar forces. A choice the grammar enforces
 * only in part is checked when it ends (choice-checks.ts), its request held until then. The
 * grammar thread is started by the first constrained request (a server that never sees one
 * never pays for it).
 */
import type { ChoiceOutput } from '../choice-output.js';
import { invalidArgument } from '../errors.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { EngineTokenizer } from '../prompt.js';
import type { LateMasks } from '../runner.js';
import type { ResolvedParams } from '../sampling-params.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import type { EngineChat } from '../tools/engine-chat.js';
import type { GenerateRequest } from '../types.js';
import { ChoiceChecks } from './choice-checks.js';
import type { CheckedConstraint, GrammarConstraint } from './constraint.js';
import { matcherOf, type GrammarBackend } from './grammar-backend.js';
import { GrammarService } from './grammar-service.js';
import { forcedTokens, type JumpTokenizer } from './jump-forward.js';
import { StepMasks } from './step-masks.js';
import type { StructuredTuning } from './tuning.js';
import { checkConstraint } from './validate.js';

/** Grammar keys whose checks are remembered (see `StructuredOutput.checked`). */
const CHECKED_KEYS = 4096;

/** What structured output counts (read by tests and benchmarks through the engine's features). */
export interface StructuredStats {
  /** Tokens appended by jump-forward. */
  readonly jumpedTokens: number;
  /** Steps that started before their masks were ready. */
  readonly lateSteps: number;
  /** Choices sampled again after their output failed its check (choice-checks.ts). */
  readonly resampledChoices: number;
  /** Choices that failed the check on every attempt (their request failed). */
  readonly failedChecks: number;
}

/**
 * A constrained request's part: its grammar, and once compiled the grammar's key (null: an
 * `auto` tools grammar that did not compile leaves the request unconstrained).
 */
interface StructuredPart {
  readonly constraint: GrammarConstraint;
  key: string | null;
}

export interface StructuredDeps {
  readonly tokenizer: EngineTokenizer;
  /** Rows of the model's logits. */
  readonly vocabSize: number;
  /** The tools' side: a tool_choice that forces a call is a grammar too. */
  readonly chat: EngineChat;
  readonly host: ExtensionHost;
  /** Threads of the native context (undefined: one per core). */
  readonly nativeThreads?: number | undefined;
  readonly tuning?: StructuredTuning | undefined;
}

export class StructuredOutput implements RequestExtension<StructuredPart>, StructuredStats {
  readonly name = 'structured output';
  private service: GrammarBackend | null = null;
  private readonly tokenizer: EngineTokenizer;
  private readonly tuning: StructuredTuning;
  /** Jump-forward (jump-forward.ts); needs a tokenizer that encodes on the event loop. */
  private readonly jumpTokenizer: JumpTokenizer | null;
  /** Each step's masks: awaited, or handed over late. */
  private readonly masks: StepMasks;
  /** The checks of choices the grammar enforces only in part. */
  private readonly checks: ChoiceChecks<LiveRequest>;
  jumpedTokens = 0;

  constructor(private readonly d: StructuredDeps) {
    this.tokenizer = d.tokenizer;
    this.tuning = d.tuning ?? {};
    this.masks = new StepMasks(this.tuning, d.nativeThreads);
    const t = d.tokenizer;
    this.jumpTokenizer =
      t.encode && t.isSpecial
        ? {
            encode: t.encode.bind(t),
            decode: (ids) => t.decode(ids),
            tokenText: (id) => t.tokenText(id),
            isSpecial: t.isSpecial.bind(t),
          }
        : null;
    const host = d.host;
    this.checks = new ChoiceChecks({
      isLive: (req) => host.request(req.id) === req,
      holdsOutput: (key) => this.holdsOutput(key),
      verify: (seq, c) => this.verify(seq, c),
      restart: (req, index, seed) => host.restartChoice(req, index, seed),
      settled: (req) => host.settle(req),
    });
  }

  get lateSteps(): number {
    return this.masks.lateSteps;
  }

  get resampledChoices(): number {
    return this.checks.resampled;
  }

  get failedChecks(): number {
    return this.checks.failed;
  }

  /** Jump-forward on: by default where the tokenizer allows it. */
  private get jumpForward(): boolean {
    return this.jumpTokenizer !== null && (this.tuning.jumpForward ?? true);
  }

  // ---------------------------------------------------------------------------- intake

  /**
   * The request's grammar, checked: the client's constraint, or the one its tool_choice
   * forces. A grammar that is complete allows only the end of the output, which min_tokens
   * would forbid.
   */
  check(request: GenerateRequest, params: ResolvedParams): StructuredPart | undefined {
    const client =
      request.constraint === undefined || request.constraint === null
        ? null
        : this.checkClient(request.constraint);
    const constraint = this.d.chat.constraint(request.prompt, client);
    if (!constraint) return undefined;
    if (params.minTokens > 0)
      throw invalidArgument(
        'params.min_tokens',
        'must be 0 with a constraint (response_format, guided decoding or tools): the grammar decides where the output ends',
      );
    return { constraint, key: null };
  }

  /** The synchronous checks of a client's constraint. */
  private checkClient(c: unknown): CheckedConstraint {
    const constraint = checkConstraint(c);
    if (!this.tokenizer.grammarVocab)
      throw invalidArgument('constraint', 'this engine has no tokenizer vocabulary to enforce it with');
    return constraint;
  }

  /** Compiles while the prompt is tokenized. */
  async prepare(part: StructuredPart): Promise<void> {
    part.key = await this.d.chat.compile(part.constraint, (c) => this.compile(c));
  }

  /** A grammar enforced only in part: the output is held until its choices are checked. */
  plan(plan: RequestPlan, part: StructuredPart | undefined): void {
    if (!part || part.key === null || !this.holdsOutput(part.key)) return;
    plan.buffered = true;
    plan.checkedChoices = true;
  }

  /** Jump-forward appends tokens without a logprob: off where each token needs its own. */
  admit(
    _req: LiveRequest,
    seq: Sequence,
    part: StructuredPart | undefined,
    plan: Readonly<RequestPlan>,
  ): void {
    if (part && part.key !== null) this.attach(seq, part.key, !plan.sampledOnly);
  }

  /** The grammar backend (xgrammar on its own thread, the one implementation). */
  get grammars(): GrammarBackend {
    // A grammar thread that died fails its requests; the next request starts a fresh one.
    if (this.service?.dead) this.service = null;
    // Jump-forward encodes on the event loop: start that tokenizer's thread now, unawaited.
    if (!this.service && this.jumpTokenizer) this.tokenizer.prepareEncode?.();
    this.service ??= new GrammarService({
      vocab: this.tokenizer.grammarVocab!(),
      vocabSize: this.d.vocabSize,
      stopTokenIds: this.tokenizer.eosTokenIds,
    });
    return this.service;
  }

  /** Compiles off the event loop; resolves to the grammar's cache key. */
  private async compile(c: GrammarConstraint): Promise<string> {
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
  private holdsOutput(key: string): boolean {
    return this.checked.has(key);
  }

  /**
   * At the end of choice `c` of `seq` (finished by the grammar): null when its output stands;
   * else why not — the document (or a tool call's arguments) does not satisfy the client's
   * schema in what the grammar could not enforce. Where nothing needs checking, null at once.
   */
  private async verify(seq: Sequence, c: ChoiceOutput): Promise<string | null> {
    const key = matcherOf(seq)?.key;
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
  private attach(seq: Sequence, key: string, jump: boolean): void {
    seq.grammar = this.grammars.createMatcher(key, jump && this.jumpForward);
  }

  /**
   * A fork's matcher: a fresh one of the same grammar, fed the child's output so far — none
   * for a best_of fork (it samples its first token itself), a beam's whole history for a beam
   * search's fork.
   */
  fork(parent: Sequence, child: Sequence): void {
    const g = matcherOf(parent);
    if (!g) return;
    const m = this.grammars.createMatcher(g.key, g.jumpForward);
    const output = child.tokens.slice(child.promptLen);
    if (output.length > 0) m.accept(output);
    child.grammar = m;
  }

  /**
   * Jump-forward: the tokens the grammar forces after `token` (just sampled for `seq`), to
   * append without sampling. Called before `afterTokens`, which moves the matcher on. After
   * `accepted` draft tokens (speculative decoding) the matcher's state is not the one `token`
   * was sampled in: the draft's check says what was forced there.
   */
  forcedAfter(seq: Sequence, token: number, accepted: number): number[] {
    const g = matcherOf(seq);
    const jump = accepted > 0 ? (seq.draft?.jumps?.[accepted] ?? '') : undefined;
    const forced = jump ?? g?.jump ?? '';
    if (!g?.jumpForward || !this.jumpTokenizer || g.error !== null || g.terminated || forced === '')
      return [];
    const tokens = forcedTokens(this.jumpTokenizer, token, forced);
    this.jumpedTokens += tokens.length;
    return tokens;
  }

  /** Before a step: its masks, late ones overlapping the forward pass (step-masks.ts). */
  beforeStep(batch: ScheduledBatch): Promise<LateMasks | undefined> | undefined {
    return this.masks.beforeStep(batch);
  }

  /**
   * Feeds sampled tokens (and those jump-forward appended) to the sequence's matcher;
   * returns an error if it is already broken.
   */
  afterTokens(seq: Sequence, tokens: readonly number[]): string | null {
    const g = matcherOf(seq);
    if (!g) return null;
    if (g.error !== null) return g.error;
    if (!g.terminated) g.accept(tokens);
    return null;
  }

  // ---------------------------------------------------------------------------- outputs

  /** A choice the grammar ended is checked first, where the grammar enforced it only in part. */
  choiceEnded(req: LiveRequest, seq: Sequence, c: ChoiceOutput): boolean {
    return this.checks.afterFinish(req, seq, c);
  }

  holds(req: LiveRequest): boolean {
    return this.checks.checking(req);
  }

  release(req: LiveRequest): void {
    for (const s of req.seqs) {
      const m = matcherOf(s);
      if (m) this.grammars.free(m);
      s.grammar = null;
    }
    this.checks.forget(req);
  }

  async close(): Promise<void> {
    await this.service?.close();
  }
}
