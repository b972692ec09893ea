/**
 * Beam search as a request extension (engine/extension.ts): a request with use_beam_search
 * runs one greedy sequence per beam that reports its top candidates instead of sampling, and
 * once every live beam of the round has reported, the round is applied (beam-search.ts
 * chooses): a beam two continuations keep is forked (its blocks shared copy-on-write), each
 * continuing beam takes its token (the other extensions see it, a grammar's matcher moves
 * on), the rest are freed; a finished search's best n beams become the request's choices,
 * detokenized and checked for stop rules like any choice's output.
 */
import { invalidArgument } from '../errors.js';
import type { ExtensionHost, PlanContext, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { EngineTokenizer } from '../prompt.js';
import type { StepOutput } from '../runner.js';
import type { ResolvedParams } from '../sampling-params.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence, SequenceSampling } from '../sequence.js';
import type { TokenLogprob } from '../types.js';
import { BeamSearch, candidatesPerBeam, type BeamCandidate, type BeamSearchOptions } from './beam-search.js';

/** A beam search request's options, made when it is planned. */
interface BeamPart {
  options: BeamSearchOptions | null;
}

const ms = () => performance.now();

export class BeamSearchExtension implements RequestExtension<BeamPart> {
  readonly name = 'beam search';
  private readonly searches = new WeakMap<LiveRequest, BeamSearch>();
  /** Searches admitted and not yet released (none: a step has no rounds to look for). */
  private live = 0;

  constructor(
    private readonly tokenizer: EngineTokenizer,
    private readonly host: ExtensionHost,
  ) {}

  check(_request: unknown, params: ResolvedParams): BeamPart | undefined {
    return params.beam ? { options: null } : undefined;
  }

  /** Greedy beams that report their candidates, the n best returned whole at the end. */
  plan(plan: RequestPlan, part: BeamPart | undefined, ctx: PlanContext): void {
    if (!part) return;
    // Beams are not sampled again one by one: their outputs could not be checked.
    if (plan.checkedChoices)
      throw invalidArgument(
        'params.use_beam_search',
        'cannot be combined with a schema the grammar enforces only in part (checked on the document): use strict: true or sampling',
      );
    const options = this.options(ctx);
    part.options = options;
    plan.sampling = beamSampling(ctx.params, options);
    plan.forkInto = 0;
    // Placeholders until the search ends (they carry a cancel or failure).
    plan.choices = ctx.params.n;
    plan.buffered = true;
    plan.rankChoices = false;
    // Candidates are ranked by their logprobs; one step's candidates are chosen among.
    plan.sampledOnly = true;
    plan.multiToken = false;
  }

  admit(req: LiveRequest, seq: Sequence, part: BeamPart | undefined): void {
    if (!part?.options) return;
    seq.beam = true;
    seq.reservedSlots = part.options.width - 1;
    this.searches.set(req, new BeamSearch(part.options, seq));
    this.live++;
  }

  /** A beam's step reports its top candidates to its search. */
  takeSample(req: LiveRequest, seq: Sequence, out: StepOutput, k: number): boolean {
    const search = this.searches.get(req);
    if (!search) return false;
    search.report(seq, candidates(out, k));
    return true;
  }

  /** After the step: the searches whose every live beam reported go one round on. */
  afterStep(batch: ScheduledBatch): void {
    if (this.live === 0) return;
    const now = ms();
    const reported = new Set<LiveRequest>();
    for (const item of batch.items) {
      if (!item.sample || item.seq.aborted) continue;
      const req = this.host.request(item.seq.requestId);
      if (req && this.searches.has(req)) reported.add(req);
    }
    for (const req of reported) if (this.host.request(req.id) === req) this.advance(req, now);
  }

  release(req: LiveRequest): void {
    if (this.searches.delete(req)) this.live--;
  }

  private advance(req: LiveRequest, now: number): void {
    const beams = this.searches.get(req)!;
    if (!beams.roundComplete) return;
    req.seqs[0].reservedSlots = 0; // its forks exist from now on
    const step = beams.advance((parent) => this.host.forkSequence(parent));
    for (const { seq, token } of step.continued) {
      seq.tokens.push(token);
      const error = this.host.afterTokens(seq, [token]);
      if (error !== null) {
        this.host.abort(req, { message: error });
        return;
      }
    }
    this.host.countGenerated(step.continued.length);
    for (const s of step.dropped) this.host.finishSequence(s);
    if (!beams.done) return;
    // The returned beams, detokenized and checked for stop rules like any choice's output.
    const results = beams.results(req.params.n).map((path, i) => {
      const c = req.makeChoice(i);
      path.tokens.forEach((token, j) => {
        if (c.reason !== null) return;
        c.accept(token, path.logprobs[j], now, j === path.tokens.length - 1);
        if (req.params.logprobs) c.logprobs.push(this.logprob(token, path.logprobs[j], path.alternatives[j]));
      });
      return c;
    });
    req.choices.splice(0, req.choices.length, ...results);
    this.host.finish(req);
  }

  /** How a beam search request ends its beams and what its beams report. */
  private options(ctx: PlanContext): BeamSearchOptions {
    const { params } = ctx;
    const beam = params.beam!;
    const tok = this.tokenizer;
    const stop = params.stop;
    return {
      width: beam.width,
      lengthPenalty: beam.lengthPenalty,
      earlyStopping: beam.earlyStopping,
      maxNew: ctx.maxNew,
      minTokens: params.minTokens,
      endTokens: ctx.endTokens,
      stopsAt:
        stop.length === 0
          ? null
          : (tokens) => {
              const text = tok.decode(tokens, { skipSpecialTokens: params.skipSpecialTokens });
              return stop.some((s) => text.includes(s));
            },
      keepAlternatives: params.logprobs ? params.topLogprobs : 0,
    };
  }

  private logprob(
    token: number,
    logprob: number,
    alternatives: readonly BeamCandidate[] | undefined,
  ): TokenLogprob {
    const tok = this.tokenizer;
    const top = (alternatives ?? []).map((a) => ({
      tokenId: a.token,
      text: tok.tokenText(a.token),
      logprob: a.logprob,
    }));
    return { tokenId: token, text: tok.tokenText(token), logprob, top };
  }
}

/** A beam search's beams are greedy and report their top candidates instead of sampling. */
function beamSampling(params: ResolvedParams, options: BeamSearchOptions): SequenceSampling {
  return {
    temperature: 0,
    topK: 0,
    topP: 1,
    repetitionPenalty: params.repetitionPenalty,
    presencePenalty: params.presencePenalty,
    frequencyPenalty: params.frequencyPenalty,
    seed: BigInt(params.seed),
    topLogprobs: candidatesPerBeam(options),
  };
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
