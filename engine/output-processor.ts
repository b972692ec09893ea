/**
 * The output processor (vLLM v1's): turns each step's sampled tokens into a request's
 * events — the choice's incremental text and stop conditions (choice-output.ts), the tokens
 * jump-forward appends after a sampled one, the grammar's verdict, logprobs, timings — and,
 * once every choice of a request has finished, its finish events (for best_of > n, the n
 * best by cumulative logprob), spans and metrics. A request cancelled or failed before that
 * ends here too (`abort`).
 */
import type { AdapterManager } from './adapters/manager.js';
import type { BeamCandidate } from './beam-search.js';
import type { ChoiceOutput } from './choice-output.js';
import type { EngineMetrics } from './engine-metrics.js';
import type { EngineError } from './errors.js';
import type { LiveRequest, RequestTable } from './live-request.js';
import type { EngineTokenizer } from './prompt.js';
import type { StepOutput } from './runner.js';
import type { ScheduledBatch } from './scheduler.js';
import { Sequence } from './sequence.js';
import { ChoiceChecks, resampleSeed } from './structured/choice-checks.js';
import type { StructuredOutput } from './structured/engine-glue.js';
import { mergeChatDeltas, resultAsDelta } from './tools/engine-chat.js';
import type { ChatDelta, FinishEvent, TokenLogprob } from './types.js';
import type { Disaggregation } from './kv-transfer/engine-glue.js';
import { asEngineError } from './request-intake.js';

export interface OutputDeps {
  readonly tokenizer: EngineTokenizer;
  /** A sequence may not grow past it (prompt + output). */
  readonly maxSeqLen: number;
  readonly structured: StructuredOutput;
  readonly adapters: AdapterManager | undefined;
  readonly table: RequestTable;
  readonly metrics: EngineMetrics;
  /** Ends a sequence in the scheduler (its blocks are freed). */
  finishSequence(seq: Sequence): void;
  /** Queues a new sequence of a live request (a choice sampled again after a failed check). */
  addSequence(seq: Sequence): void;
  /** A new running beam sharing `parent`'s tokens and blocks (the scheduler's forkBeam). */
  forkBeam(parent: Sequence): Sequence;
  /** Split prefill/decode: stops a prefill-only request after its first token, and holds its finish until it moved on. */
  readonly disaggregation: Pick<Disaggregation, 'afterFirstToken' | 'beforeFinalize'>;
}

const ms = () => performance.now();

export class OutputProcessor {
  /** Choices whose output is checked before the request finishes (structured/choice-checks.ts). */
  private readonly checks: ChoiceChecks<LiveRequest>;

  constructor(private readonly deps: OutputDeps) {
    this.checks = new ChoiceChecks(deps.structured, {
      isLive: (req) => deps.table.get(req.id) === req,
      restart: (req, index, attempt) => this.restartChoice(req, index, attempt),
      settled: (req) => this.finishIfDone(req),
    });
  }

  /** A finished step's sampled tokens: streams them and finishes what they end. */
  process(batch: ScheduledBatch, out: StepOutput): void {
    const now = ms();
    const beamSearches = new Set<LiveRequest>();
    batch.items.forEach((item, k) => {
      if (!item.sample || item.seq.aborted) return;
      const seq = item.seq;
      const req = this.deps.table.get(seq.requestId);
      if (!req) return;
      if (req.beams) {
        if (req.firstToken < 0) this.firstToken(req, seq, now);
        req.beams.report(seq, candidates(out, k));
        beamSearches.add(req);
        return;
      }
      const c = req.choices[seq.index];
      if (c.reason !== null) return;
      if (req.firstToken < 0) this.firstToken(req, seq, now);
      this.acceptToken(req, seq, c, out, k, now);
      if (req.pd) this.deps.disaggregation.afterFirstToken(req, c);
      if (c.reason !== null) {
        this.deps.finishSequence(seq);
        // A choice the grammar enforced only in part is checked first (the check finishes it).
        if (!this.checks.afterFinish(req, seq, c)) this.finishIfDone(req);
      }
    });
    for (const req of beamSearches) if (this.deps.table.get(req.id) === req) this.advanceBeams(req, now);
  }

  /**
   * Once every beam of a search has reported, chooses the next beams (beam-search.ts): a beam
   * two continuations keep is forked (its blocks shared copy-on-write), each continuing beam
   * takes its token (and its matcher too), the rest are freed; a finished search returns its
   * best n beams.
   */
  private advanceBeams(req: LiveRequest, now: number): void {
    const beams = req.beams!;
    if (!beams.roundComplete) return;
    req.seqs[0].reservedSlots = 0; // its forks exist from now on
    const step = beams.advance((parent) => this.deps.forkBeam(parent));
    for (const { seq, token } of step.continued) {
      seq.tokens.push(token);
      const grammarError = this.deps.structured.afterTokens(seq, [token]);
      if (grammarError !== null) {
        this.abort(req, { message: grammarError });
        return;
      }
    }
    this.deps.metrics.generationTokens += step.continued.length;
    for (const s of step.dropped) this.deps.finishSequence(s);
    if (!beams.done) return;
    // The returned beams, detokenized and checked for stop rules like any choice's output.
    const results = beams.results(req.params.n).map((path, i) => {
      const c = req.makeChoice(i);
      path.tokens.forEach((token, j) => {
        if (c.reason !== null) return;
        c.accept(token, path.logprobs[j], now, j === path.tokens.length - 1);
        if (req.params.logprobs)
          c.logprobs.push(this.beamLogprob(token, path.logprobs[j], path.alternatives[j]));
      });
      return c;
    });
    req.choices.splice(0, req.choices.length, ...results);
    this.finalize(req);
  }

  private beamLogprob(
    token: number,
    logprob: number,
    alternatives: readonly BeamCandidate[] | undefined,
  ): TokenLogprob {
    const tok = this.deps.tokenizer;
    const top = (alternatives ?? []).map((a) => ({
      tokenId: a.token,
      text: tok.tokenText(a.token),
      logprob: a.logprob,
    }));
    return { tokenId: token, text: tok.tokenText(token), logprob, top };
  }

  /** Finalizes `req` once every choice has finished and no check is pending. */
  private finishIfDone(req: LiveRequest): void {
    if (req.choices.every((x) => x.reason !== null) && !this.checks.checking(req)) this.finalize(req);
  }

  /**
   * Choice `index` of `req` failed its check: a new sequence samples it again from the prompt
   * (its full blocks come from the prefix cache), with the seed of attempt `attempt`
   * (choice-checks.ts), a fresh matcher and a fresh output. The request's output is held
   * (`buffered`), so nothing of the failed attempt was sent.
   */
  private restartChoice(req: LiveRequest, index: number, attempt: number): void {
    const old = req.seqs.findLast((s) => s.index === index);
    const c = req.choices[index];
    if (!old || !c) return;
    const seq = new Sequence({
      requestId: req.id,
      index,
      prompt: old.tokens.slice(0, old.promptLen),
      sampling: { ...old.sampling, seed: resampleSeed(BigInt(c.seed), attempt) },
      arrival: old.arrival,
      cacheExtra: old.cacheExtra,
    });
    seq.cachedPromptTokens = old.cachedPromptTokens;
    seq.adapterSlot = old.adapterSlot;
    seq.adapterGeneration = old.adapterGeneration;
    const g = old.grammar;
    if (g) this.deps.structured.attach(seq, g.key, g.jumpForward);
    req.choices[index] = c.renewed();
    req.seqs.push(seq);
    this.deps.addSequence(seq);
  }

  private firstToken(req: LiveRequest, seq: Sequence, now: number): void {
    req.firstToken = now;
    req.cachedPromptTokens = Math.max(0, seq.cachedPromptTokens);
    this.deps.metrics.ttft.observe((now - req.arrival) / 1000);
    req.spans?.firstToken(now, req.promptLen, req.cachedPromptTokens);
  }

  /** The `k`-th item's sampled token (and what jump-forward appends) joins choice `c`. */
  private acceptToken(
    req: LiveRequest,
    seq: Sequence,
    c: ChoiceOutput,
    out: StepOutput,
    k: number,
    now: number,
  ): void {
    const token = out.tokens[k];
    const logprob = out.logprobs[k];
    const atLimit = () => c.tokenIds.length + 1 >= req.maxNew || seq.tokens.length >= this.deps.maxSeqLen;
    const sampled = c.accept(token, logprob, now, atLimit());
    const { delta, chat, tokens } = this.appendForced(seq, c, token, sampled, now, atLimit);
    const grammarError = this.deps.structured.afterTokens(seq, tokens);
    if (grammarError !== null && c.reason === null) {
      c.reason = 'error';
      c.error = grammarError;
    }
    if (sampled.gapMs !== null) this.deps.metrics.interToken.observe(sampled.gapMs / 1000);
    this.deps.metrics.generationTokens += tokens.length;
    const lp = req.params.logprobs ? this.tokenLogprob(token, logprob, out, k) : undefined;
    if (lp) c.logprobs.push(lp);
    if (req.buffered) return;
    req.queue.push({
      type: 'token',
      requestId: req.id,
      index: c.index,
      tokenIds: tokens,
      text: delta,
      ...(lp ? { logprobs: [lp] } : {}),
      ...(chat ? { chat } : {}),
    });
  }

  /**
   * Jump-forward's append: after a sampled token, the tokens the grammar forces join the
   * sequence and the choice without a sampling step. Returns the step's tokens for the choice,
   * sampled one first, and their text and chat deltas. `atLimit` says whether the next token
   * is the last the request may have.
   */
  private appendForced(
    seq: Sequence,
    c: ChoiceOutput,
    token: number,
    sampled: { delta: string; chat?: ChatDelta },
    now: number,
    atLimit: () => boolean,
  ): { tokens: number[]; delta: string; chat: ChatDelta | undefined } {
    const out = { tokens: [token], delta: sampled.delta, chat: sampled.chat };
    if (c.reason !== null) return out;
    for (const j of this.deps.structured.forcedAfter(seq, token)) {
      seq.tokens.push(j);
      out.tokens.push(j);
      const r = c.accept(j, 0, now, atLimit());
      out.delta += r.delta;
      if (r.chat) out.chat = out.chat ? mergeChatDeltas(out.chat, r.chat) : r.chat;
      if (c.reason !== null) break; // a stop string or the length limit inside the forced text
    }
    return out;
  }

  private tokenLogprob(token: number, logprob: number, out: StepOutput, k: number): TokenLogprob {
    const tok = this.deps.tokenizer;
    const top: { tokenId: number; text: string; logprob: number }[] = [];
    const stride = out.topLogprobsStride;
    for (let j = 0; j < stride; j++) {
      const id = out.topLogprobIds[k * stride + j];
      if (id < 0) break;
      top.push({ tokenId: id, text: tok.tokenText(id), logprob: out.topLogprobValues[k * stride + j] });
    }
    return { tokenId: token, text: tok.tokenText(token), logprob, top };
  }

  /**
   * Ends a request before its choices finished: cancelled, or failed with `failure.message`
   * (a server `fault` ends its stream with that error instead of finish events). Its
   * sequences are marked aborted and those not inside the running step freed at once (the
   * step loop reaps the others after the step).
   */
  abort(req: LiveRequest, failure?: { message: string; fault?: EngineError | undefined }): void {
    if (failure) req.fault = failure.fault;
    for (const c of req.choices) {
      if (c.reason !== null) continue;
      c.reason = failure ? 'error' : 'cancelled';
      if (failure) c.error = failure.message;
    }
    for (const s of req.seqs) {
      s.aborted = true;
      if (!s.inFlight && s.status !== 'finished') this.deps.finishSequence(s);
    }
    this.finalize(req);
  }

  /**
   * Sends the finish events (and, for best_of > n, the chosen n) and forgets the request. A
   * request handed to another engine (split prefill/decode) finishes once the hand-off is done.
   */
  private finalize(req: LiveRequest): void {
    const handOff = req.pd && this.deps.disaggregation.beforeFinalize(req);
    if (handOff) {
      handOff.then(
        () => this.finalizeNow(req),
        (e: unknown) => {
          req.fault = asEngineError(e);
          this.finalizeNow(req);
        },
      );
      return;
    }
    this.finalizeNow(req);
  }

  private finalizeNow(req: LiveRequest): void {
    const d = this.deps;
    if (!d.table.remove(req.id)) return;
    req.detachSignal();
    d.adapters?.release(req.adapter);
    d.structured.release(req.seqs);
    this.checks.forget(req);
    const end = ms();
    const first = req.firstToken >= 0 ? req.firstToken : end;
    const scheduled = req.firstScheduled >= 0 ? req.firstScheduled : first;
    const timings = {
      queueMs: scheduled - req.arrival,
      prefillMs: first - scheduled,
      decodeMs: end - first,
      ttftMs: req.firstToken >= 0 ? req.firstToken - req.arrival : 0,
    };
    // Beam search's choices come ranked by beam score; best_of > n ranks by cumulative logprob;
    // choices held for their checks are all sent, in order.
    const chosen =
      !req.beams && req.params.bestOf > req.params.n ? bestChoices(req.choices, req.params.n) : req.choices;
    let generated = 0;
    chosen.forEach((c, j) => {
      const index = req.buffered ? j : c.index;
      const chat = c.chatResult();
      generated += c.tokenIds.length;
      // A held choice that failed (e.g. its check, on every attempt) sends no text: only its error.
      if (req.buffered && c.tokenIds.length > 0 && c.reason !== 'error') {
        req.queue.push({
          type: 'token',
          requestId: req.id,
          index,
          tokenIds: c.tokenIds,
          text: c.text,
          ...(req.params.logprobs ? { logprobs: c.logprobs } : {}),
          ...(chat ? { chat: resultAsDelta(chat) } : {}),
        });
      }
      const finish: FinishEvent = {
        type: 'finish',
        requestId: req.id,
        index,
        reason: c.reason ?? 'cancelled',
        text: c.text,
        tokenIds: c.tokenIds,
        cumulativeLogprob: c.cumulativeLogprob,
        usage: {
          promptTokens: req.promptLen,
          completionTokens: c.tokenIds.length,
          cachedPromptTokens: req.cachedPromptTokens,
        },
        timings,
        seed: c.seed,
        ...(c.error !== undefined ? { error: c.error } : {}),
        ...(chat ? { chat } : {}),
        decodeTimesMs: c.gapList,
        ...(req.pd?.params ? { kvTransfer: req.pd.params } : {}),
      };
      if (!req.fault) req.queue.push(finish);
    });
    req.spans?.finish(end, {
      reasons: chosen.map((c) => c.reason ?? 'cancelled'),
      completionTokens: generated,
      error: chosen.find((c) => c.error !== undefined)?.error,
    });
    req.queue.end(req.fault);
    this.recordFinished(req, timings.ttftMs, end, generated);
    d.table.wake();
  }

  private recordFinished(req: LiveRequest, ttftMs: number, end: number, generated: number): void {
    const gaps = req.choices.reduce((n, c) => n + c.gaps, 0);
    this.deps.metrics.finished({
      ok: req.choices.every((c) => c.reason !== 'error'),
      ttft: req.firstToken >= 0 ? ttftMs / 1000 : null,
      interToken: gaps > 0 ? req.choices.reduce((s, c) => s + c.gapSumMs, 0) / gaps / 1000 : null,
      e2e: (end - req.arrival) / 1000,
      promptTokens: req.promptLen,
      generationTokens: generated,
    });
  }
}

/** best_of > n: the n choices with the highest cumulative logprob, best first. */
function bestChoices(choices: readonly ChoiceOutput[], n: number): ChoiceOutput[] {
  return [...choices].sort((a, b) => b.cumulativeLogprob - a.cumulativeLogprob).slice(0, n);
}

/** The `k`-th item's top candidates (a beam reports them), best first. */
function candidates(out: StepOutput, k: number): BeamCandidate[] {
  const list: BeamCandidate[] = [];
  const stride = out.topLogprobsStride;
  for (let j = 0; j < stride; j++) {
    const token = out.topLogprobIds[k * stride + j];
    if (token < 0) break;
    list.push({ token, logprob: out.topLogprobValues[k * stride + j] });
  }
  return list;
}
