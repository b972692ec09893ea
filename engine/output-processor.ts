/**
 * The output processor (vLLM v1's): turns each step's sampled tokens into a request's
 * events — the choice's incremental text and stop conditions (choice-output.ts), the tokens
 * an extension appends after a sampled one, logprobs, timings — and, once every choice of a
 * request has finished and no extension holds it, its finish events (for best_of > n, the n
 * best by cumulative logprob), spans and metrics. A request cancelled or failed before that
 * ends here too (`abort`). The request features act through their hooks (extension.ts).
 */
import type { AdapterManager } from './adapters/manager.js';
import type { ChoiceOutput } from './choice-output.js';
import type { EngineMetrics } from './engine-metrics.js';
import { asEngineError } from './errors.js';
import type { RequestFailure } from './extension.js';
import type { ExtensionList } from './extension-list.js';
import type { LiveRequest, RequestTable } from './live-request.js';
import type { EngineTokenizer } from './prompt.js';
import type { StepOutput } from './runner.js';
import type { ScheduledBatch } from './scheduler.js';
import { Sequence } from './sequence.js';
import { StepTokens, type StepToken } from './step-tokens.js';
import { mergeChatDeltas, resultAsDelta } from './tools/engine-chat.js';
import type { ChatDelta, FinishEvent, TokenLogprob } from './types.js';

export interface OutputDeps {
  readonly tokenizer: EngineTokenizer;
  /** A sequence may not grow past it (prompt + output). */
  readonly maxSeqLen: number;
  readonly adapters: AdapterManager | undefined;
  readonly table: RequestTable;
  readonly metrics: EngineMetrics;
  /** The request features (extension.ts). */
  readonly extensions: ExtensionList;
  /** Ends a sequence in the scheduler (its blocks are freed). */
  finishSequence(seq: Sequence): void;
  /** Queues a new sequence of a live request (a choice sampled again). */
  addSequence(seq: Sequence): void;
  /** A sequence made from another joins its request (the extensions copy their state). */
  forked(parent: Sequence, child: Sequence): void;
}

const ms = () => performance.now();

export class OutputProcessor {
  constructor(private readonly deps: OutputDeps) {}

  /** A finished step's sampled tokens: streams them and finishes what they end. */
  process(batch: ScheduledBatch, out: StepOutput): void {
    const now = ms();
    const step = new StepTokens(batch, out);
    const exts = this.deps.extensions;
    batch.items.forEach((item, k) => {
      if (!item.sample || item.seq.aborted) return;
      const seq = item.seq;
      const req = this.deps.table.get(seq.requestId);
      if (!req) return;
      const c = req.choices[seq.index];
      if (c.reason !== null) return;
      if (req.firstToken < 0) this.firstToken(req, seq, now);
      if (exts.takeSample(req, seq, out, k)) return;
      const had = c.tokenIds.length;
      this.acceptTokens(req, seq, c, step, k, now);
      if (had === 0 && c.tokenIds.length > 0) exts.firstToken(req, c);
      if (c.reason !== null) {
        this.deps.finishSequence(seq);
        // An extension may hold the request open (a check of the choice's output).
        if (!exts.choiceEnded(req, seq, c)) this.finishIfDone(req);
      }
    });
  }

  /** An extension's hold on `req` ended: finishes it if nothing else keeps it open. */
  settle(req: LiveRequest): void {
    this.finishIfDone(req);
  }

  /** Finishes `req` now with the choices it holds (an extension made them). */
  finish(req: LiveRequest): void {
    this.finalize(req);
  }

  /** Finalizes `req` once every choice has finished and no extension holds it. */
  private finishIfDone(req: LiveRequest): void {
    if (req.choices.every((x) => x.reason !== null) && !this.deps.extensions.holds(req)) this.finalize(req);
  }

  /**
   * Samples choice `index` of `req` again from the prompt (its full blocks come from the
   * prefix cache) with `seed`, a new sequence with the extensions' state of a fresh one and
   * a fresh output. Only for a request whose output is held (`buffered`): nothing of the
   * earlier attempt was sent.
   */
  restartChoice(req: LiveRequest, index: number, seed: bigint): void {
    const old = req.seqs.findLast((s) => s.index === index);
    const c = req.choices[index];
    if (!old || !c) return;
    const seq = new Sequence({
      requestId: req.id,
      index,
      prompt: old.tokens.slice(0, old.promptLen),
      sampling: { ...old.sampling, seed },
      arrival: old.arrival,
      cacheExtra: old.cacheExtra,
    });
    seq.cachedPromptTokens = old.cachedPromptTokens;
    seq.adapterSlot = old.adapterSlot;
    seq.adapterGeneration = old.adapterGeneration;
    this.deps.forked(old, seq);
    req.choices[index] = c.renewed();
    this.deps.addSequence(seq);
  }

  private firstToken(req: LiveRequest, seq: Sequence, now: number): void {
    req.firstToken = now;
    req.cachedPromptTokens = Math.max(0, seq.cachedPromptTokens);
    this.deps.metrics.ttft.observe((now - req.arrival) / 1000);
    req.spans?.firstToken(now, req.promptLen, req.cachedPromptTokens);
  }

  /**
   * The `k`-th item's tokens join choice `c`: the tokens the sampler accepted before the one
   * it sampled (step-tokens.ts), the sampled token, and what an extension appends after it.
   * They go in one by one, so a stop condition among them ends the choice where it occurs.
   */
  private acceptTokens(
    req: LiveRequest,
    seq: Sequence,
    c: ChoiceOutput,
    step: StepTokens,
    k: number,
    now: number,
  ): void {
    const produced = step.of(k);
    const sampled = { delta: '', chat: undefined as ChatDelta | undefined };
    const early: number[] = [];
    const lps: TokenLogprob[] = [];
    let gapMs: number | null = null;
    // The scheduler has appended the step's tokens to seq.tokens: those after the one being
    // accepted do not count against maxSeqLen yet.
    let later = produced.length - 1;
    const atLimit = () =>
      c.tokenIds.length + 1 >= req.maxNew || seq.tokens.length - later >= this.deps.maxSeqLen;
    for (const p of produced) {
      const r = c.accept(p.token, p.logprob, now, atLimit());
      if (early.length === 0) gapMs = r.gapMs;
      sampled.delta += r.delta;
      if (r.chat) sampled.chat = sampled.chat ? mergeChatDeltas(sampled.chat, r.chat) : r.chat;
      if (req.params.logprobs) lps.push(this.tokenLogprob(p));
      if (later === 0 || c.reason !== null) break;
      early.push(p.token);
      later--;
    }
    const last = produced[early.length].token;
    const forced = this.appendForced(seq, c, last, sampled, now, atLimit, step.accepted(k));
    const tokens = [...early, ...forced.tokens];
    const error = this.deps.extensions.afterTokens(seq, tokens);
    if (error !== null && c.reason === null) {
      c.reason = 'error';
      c.error = error;
    }
    if (gapMs !== null) this.deps.metrics.interToken.observe(gapMs / 1000);
    this.deps.metrics.generationTokens += tokens.length;
    c.logprobs.push(...lps);
    if (req.buffered) return;
    req.queue.push({
      type: 'token',
      requestId: req.id,
      index: c.index,
      tokenIds: tokens,
      text: forced.delta,
      ...(lps.length > 0 ? { logprobs: lps } : {}),
      ...(forced.chat ? { chat: forced.chat } : {}),
    });
  }

  /**
   * After a sampled token, the tokens an extension forces join the sequence and the choice
   * without a sampling step. Returns the step's tokens for the choice, sampled one first, and
   * their text and chat deltas. `atLimit` says whether the next token is the last the request
   * may have; `accepted`: the tokens of the step accepted before the sampled one.
   */
  private appendForced(
    seq: Sequence,
    c: ChoiceOutput,
    token: number,
    sampled: { delta: string; chat?: ChatDelta },
    now: number,
    atLimit: () => boolean,
    accepted: number,
  ): { tokens: number[]; delta: string; chat: ChatDelta | undefined } {
    const out = { tokens: [token], delta: sampled.delta, chat: sampled.chat };
    if (c.reason !== null) return out;
    for (const j of this.deps.extensions.forcedAfter(seq, token, accepted)) {
      seq.tokens.push(j);
      out.tokens.push(j);
      const r = c.accept(j, 0, now, atLimit());
      out.delta += r.delta;
      if (r.chat) out.chat = out.chat ? mergeChatDeltas(out.chat, r.chat) : r.chat;
      if (c.reason !== null) break; // a stop string or the length limit inside the forced text
    }
    return out;
  }

  private tokenLogprob(p: StepToken): TokenLogprob {
    const tok = this.deps.tokenizer;
    const top: { tokenId: number; text: string; logprob: number }[] = [];
    const stride = p.topIds.length > 0 ? p.topStride : 0;
    for (let j = 0; j < stride; j++) {
      const id = p.topIds[p.topAt + j];
      if (id < 0) break;
      top.push({ tokenId: id, text: tok.tokenText(id), logprob: p.topValues[p.topAt + j] });
    }
    return { tokenId: p.token, text: tok.tokenText(p.token), logprob: p.logprob, top };
  }

  /**
   * Ends a request before its choices finished: cancelled, or failed with `failure.message`
   * (a server `fault` ends its stream with that error instead of finish events). Its
   * sequences are marked aborted and those not inside the running step freed at once (the
   * step loop reaps the others after the step).
   */
  abort(req: LiveRequest, failure?: RequestFailure): void {
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
   * Sends the finish events (and, for best_of > n, the chosen n) and forgets the request,
   * once what the extensions hold it for (`beforeFinalize`) has settled.
   */
  private finalize(req: LiveRequest): void {
    const wait = this.deps.extensions.beforeFinalize(req);
    if (wait) {
      wait.then(
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
    const extra = d.extensions.finishFields(req); // asked before they let go of the request
    d.extensions.release(req);
    const end = ms();
    const first = req.firstToken >= 0 ? req.firstToken : end;
    const scheduled = req.firstScheduled >= 0 ? req.firstScheduled : first;
    const timings = {
      queueMs: scheduled - req.arrival,
      prefillMs: first - scheduled,
      decodeMs: end - first,
      ttftMs: req.firstToken >= 0 ? req.firstToken - req.arrival : 0,
    };
    // best_of > n ranks by cumulative logprob; other held choices are all sent, in order.
    const chosen = req.rankChoices ? bestChoices(req.choices, req.params.n) : req.choices;
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
        ...extra,
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
