/**
 * The one seam between the engine's core and the request features built on it (vLLM's
 * `KVConnectorBase_V1` is the model): a feature implements the hooks of `RequestExtension`
 * it needs, and request intake, the step loop and the output processor call every extension
 * at fixed points of a request's life. The core never names a feature; what a feature needs
 * from the core it asks through `ExtensionHost`. The features and their order are in
 * request-features.ts.
 *
 * A request's life, and the hooks in the order they run (each walks the extensions in list
 * order; a hook an extension leaves out is skipped):
 *
 *  intake (request-intake.ts)
 *   1. `check(request, params)` — before any work, no tokenizer: refuse a field (throw an
 *      EngineError naming it) or return the request's part (undefined: not involved). Also run
 *      alone, without admission, to answer a request handed over by another engine.
 *   2. `promptInput(prompt, part)` — the prompt as the tokenizer reads it (a text prompt's
 *      image parts become the model's image placeholder, as a chat template writes them).
 *      `promptText(text, part)` — a chat prompt's text as its template rendered it, before it
 *      is tokenized (Gemma 3's processor expands each image's placeholder as text, so the
 *      tokenizer sees the joined text as transformers' does).
 *      `prepare(part)` — while the prompt is tokenized off the event loop (a grammar compile,
 *      an image's encoding); a rejection fails the request.
 *      `prompt(ids, part)` — tokenized and prepared: the prompt's tokens as the model takes
 *      them (an image's one placeholder token becomes its tiles' tokens); may refuse (throw).
 *   3. `plan(plan, part, ctx)` — tokenized: shape how the request runs (`RequestPlan`: its
 *      first sequence's sampling, forks, choices, held output, what its steps may carry);
 *      may refuse the request (throw), and changes nothing but the plan and its own part (a
 *      later refusal drops the request). An extension may read what earlier ones planned.
 *   4. `admit(req, seq, part, plan)` — the request is live: attach per-request and
 *      per-sequence state. Must not throw.
 *   5. `beforeQueue(req, seq)` — true: the extension keeps the first sequence out of the
 *      scheduler and queues it itself later (`host.enqueue`; split prefill/decode pulls the
 *      prompt's KV first). Else the core queues it.
 *  step loop (engine-core.ts), one native step in flight at most
 *   6. `beforeSchedule(running, waiting)` — before the scheduler (speculation proposes
 *      drafts); may return a promise the loop awaits.
 *   7. `fork(parent, child)` — a sequence forked from another (best_of after the prompt, a
 *      beam two continuations keep, a choice sampled again): copy per-sequence state.
 *   8. `beforeStep(batch)` — the batch is scheduled: `LateMasks` when the step must start
 *      before the extension's sampler inputs are ready (grammar masks); may await them itself.
 *  output processor (output-processor.ts)
 *      `stepOutput(batch, out)` — the step's result, before any of its items is processed: read
 *      what the step computed besides the sampled tokens (prompt logprobs of prefill rows).
 *  per sampled item of the step
 *   9. `takeSample(req, seq, out, k)` — true: the item's sampled output is the extension's,
 *      not its choice's (beam search ranks candidates across beams); nothing below runs for it.
 *  10. `forcedAfter(seq, token, accepted)` — tokens to append after the step's last token
 *      without sampling (jump-forward); the first extension that answers any wins.
 *  11. `afterTokens(seq, tokens)` — the step's tokens joined the sequence (also called for
 *      tokens appended outside a step, `host.afterTokens`); a string fails the choice.
 *  12. `firstToken(req, choice)` — the choice's output got its first tokens; may end it.
 *  13. `choiceEnded(req, seq, choice)` — a choice ended; true holds the request's finish
 *      (a check of the output) until the extension calls `host.settle(req)`.
 *      `holds(req)` — whether the extension still holds it.
 *  14. `finishing(req, seq)` — a sequence ends, before its blocks are freed (cancelled ones
 *      too): lease them, drop the sequence's own state.
 *  after the step: `afterStep(batch, out)` (engine-core.ts) — learn from it, finish rounds.
 *  finish
 *  15. `beforeFinalize(req)` — every choice ended: a promise holds the finish events until
 *      it settles (a hand-off to another engine); a rejection fails the request.
 *  16. `finishFields(req)` — fields every finish event of the request carries.
 *  17. `release(req)` — the request is gone: free what it held (matchers, state).
 *  engine
 *      `cancel(id, req)` — a cancel for `id` (req: undefined when not live): true when the
 *      id named something of the extension's. `close()` — the engine closes, after the loop.
 *      The features' part of `Engine.status()` is assembled in request-features.ts.
 *
 * Pooling (engine/pooling/pooling-extension.ts) plugs in so: its `check` knows the ids it was
 * told to expect, `admit` marks their sequences (`Sequence.pooled`), `beforeQueue` queues the
 * ones admitted together at once, `takeSample` takes the state the prompt's last step returned
 * (`StepOutput.states`), and `beforeSchedule` finishes those requests. The features still to
 * come plug in the same way, each in its own folder: images check and `prepare`
 * their encodings beside the tokenizer, `plan` adds the images' hashes to the prefix-cache key
 * (`cacheExtra`) and `beforeStep` gives the step its encoder work. Per-block image keys and
 * pooled outputs in the step result are the block manager's and the runner's to add.
 */
import type { ChoiceOutput } from './choice-output.js';
import type { EngineError } from './errors.js';
import type { LiveRequest } from './live-request.js';
import type { LateMasks, StepOutput } from './runner.js';
import type { ResolvedParams } from './sampling-params.js';
import type { ScheduledBatch } from './scheduler.js';
import type { Sequence, SequenceSampling } from './sequence.js';
import type { FinishEvent, GenerateEvent, GenerateRequest, PromptInput } from './types.js';

/**
 * How an admitted request runs, built by intake after tokenizing and shaped by each
 * extension's `plan` in list order. Intake builds the first sequence and the live request
 * from it; the flags are read by extensions (`admit`) and the output processor.
 */
export interface RequestPlan {
  /** The first sequence's sampler settings (forks derive theirs from it). */
  sampling: SequenceSampling;
  /** Sequences the first forks into once its prompt is computed (best_of; 0: none). */
  forkInto: number;
  /** Choice outputs made at admission. */
  choices: number;
  /** Events held until the request finishes (then sent whole). */
  buffered: boolean;
  /** The finish sends the best `n` choices by cumulative logprob (best_of > n). */
  rankChoices: boolean;
  /** Every output token must come from the sampler with its logprob: none may be appended unsampled. */
  sampledOnly: boolean;
  /** A choice's output is checked when it ends, and one that fails is sampled again alone. */
  checkedChoices: boolean;
  /** A step may produce several tokens for it (draft tokens it verifies); else one sampled token. */
  multiToken: boolean;
  /** Prefix-cache isolation key of its blocks ('' for the base model). */
  cacheExtra: string;
  /** Every prompt token is computed, none taken from the prefix cache (prompt logprobs read each row). */
  wholePrompt: boolean;
}

/** What a plan hook knows of the request besides its plan. */
export interface PlanContext {
  readonly params: ResolvedParams;
  /** Output tokens it may have (max_tokens, within maxSeqLen). */
  readonly maxNew: number;
  /** Tokens that end its output: stop ids, and end-of-sequence unless ignore_eos. */
  readonly endTokens: ReadonlySet<number>;
}

/** A failure that ends a request (`host.abort`). */
export interface RequestFailure {
  readonly message: string;
  /** A server fault: the stream ends with this error instead of finish events. */
  readonly fault?: EngineError | undefined;
}

/**
 * One request feature. `Part` is what its `check` returns for a request and gets back at
 * `prepare`, `plan` and `admit`; state that lives longer it keeps itself, keyed by request
 * or sequence, and drops at `release` / `finishing`.
 */
export interface RequestExtension<Part = unknown> {
  /** For errors and traces. */
  readonly name: string;
  check?(request: GenerateRequest, params: ResolvedParams): Part | undefined;
  promptInput?(prompt: PromptInput, part: Part): PromptInput;
  promptText?(text: string, part: Part): string;
  prepare?(part: Part): Promise<void>;
  prompt?(ids: readonly number[], part: Part): number[];
  plan?(plan: RequestPlan, part: Part | undefined, ctx: PlanContext): void;
  admit?(req: LiveRequest, seq: Sequence, part: Part | undefined, plan: Readonly<RequestPlan>): void;
  beforeQueue?(req: LiveRequest, seq: Sequence): boolean;
  beforeSchedule?(running: readonly Sequence[], waiting: number): Promise<void> | void;
  fork?(parent: Sequence, child: Sequence): void;
  beforeStep?(batch: ScheduledBatch): Promise<LateMasks | undefined> | undefined;
  stepOutput?(batch: ScheduledBatch, out: StepOutput): void;
  takeSample?(req: LiveRequest, seq: Sequence, out: StepOutput, k: number): boolean;
  forcedAfter?(seq: Sequence, token: number, accepted: number): readonly number[];
  afterTokens?(seq: Sequence, tokens: readonly number[]): string | null;
  firstToken?(req: LiveRequest, choice: ChoiceOutput): void;
  choiceEnded?(req: LiveRequest, seq: Sequence, choice: ChoiceOutput): boolean;
  holds?(req: LiveRequest): boolean;
  finishing?(req: LiveRequest | undefined, seq: Sequence): void;
  afterStep?(batch: ScheduledBatch, out: StepOutput): void;
  beforeFinalize?(req: LiveRequest): Promise<void> | undefined;
  finishFields?(req: LiveRequest): Partial<FinishEvent> | undefined;
  release?(req: LiveRequest): void;
  cancel?(id: string, req: LiveRequest | undefined): boolean;
  close?(): Promise<void> | void;
}

/** What the core does for an extension. */
export interface ExtensionHost {
  /** The live request of an id (undefined: not admitted yet, or gone). */
  request(id: string): LiveRequest | undefined;
  /** The live requests, in admission order. */
  liveRequests(): readonly LiveRequest[];
  /** Puts sequences of live requests in the scheduler's queue, all of them before it wakes the step loop. */
  enqueue(...seqs: Sequence[]): void;
  /** Ends a sequence: every `finishing` hook, then the scheduler frees its blocks. */
  finishSequence(seq: Sequence): void;
  /** A new running sequence sharing `parent`'s tokens and blocks copy-on-write (`fork` hooks run). */
  forkSequence(parent: Sequence): Sequence;
  /** Tokens appended to `seq` outside a step's sampling: every `afterTokens` hook; the first error or null. */
  afterTokens(seq: Sequence, tokens: readonly number[]): string | null;
  /** Samples choice `index` of `req` again from its prompt with `seed` (a fresh output; `fork` hooks run). */
  restartChoice(req: LiveRequest, index: number, seed: bigint): void;
  /** An extension's hold on `req` ended: it finishes if every choice has ended and nothing holds it. */
  settle(req: LiveRequest): void;
  /** Finishes `req` now with the choices it holds. */
  finish(req: LiveRequest): void;
  /** Ends `req` before its choices did: cancelled (no failure) or failed. */
  abort(req: LiveRequest, failure?: RequestFailure): void;
  /** Output tokens that joined choices outside the output processor (beam rounds), for the metrics. */
  countGenerated(tokens: number): void;
  /** Checks a request as `generate` would, without admitting it. */
  check(request: GenerateRequest): void;
  /** Submits a request as a client would. */
  submit(request: GenerateRequest): AsyncIterable<GenerateEvent>;
  /** Cancels a live request. */
  cancel(id: string): void;
}

/** Several extensions' late sampler inputs as one: ready when all are, each told of the wait. */
export function joinLateMasks(parts: readonly LateMasks[]): LateMasks | undefined {
  if (parts.length <= 1) return parts[0];
  return {
    masks: Promise.all(parts.map((p) => p.masks)).then(() => {}),
    waited: (ms) => {
      for (const p of parts) p.waited?.(ms);
    },
  };
}
