/**
 * Beam search over one request (vLLM's `use_beam_search`), with the selection rules of Hugging
 * Face's `generate(num_beams=W)` so that its output is the reference the tests hold it to:
 *
 * - Every live beam's step reports its top candidates (token, logprob of the model's
 *   distribution after penalties and the grammar's mask). Once every live beam has reported,
 *   all candidates are ranked by accumulated logprob and the best K = max(2, 1 + end tokens)
 *   × W kept (a beam's own top K is enough to find them).
 * - A candidate that ends (an end-of-sequence or stop token, a stop string, or the length
 *   limit) becomes a finished beam only if it ranks among the best W, scored
 *   accumulated logprob / (generated tokens, the end token included) ^ length_penalty; the
 *   finished set keeps the best W. The best W candidates that do not end continue.
 * - Before `minTokens` output tokens, end tokens are not candidates (as HF's min-new-tokens
 *   processor sets their logprob to -inf, without renormalising the others).
 * - It stops when nothing can continue, when the finished set is full and `earlyStopping` is
 *   true, or when the best running beam can no longer beat the worst finished one (HF's
 *   heuristic: at the current length, or at the length limit for "never" with a positive
 *   length penalty).
 *
 * This class only chooses; beam-extension.ts applies a step: it pushes each chosen token,
 * and the KV blocks of a beam that two continuations share are forked copy-on-write
 * (`fork`, called before any token is pushed) while beams no continuation keeps are freed.
 */
import type { Sequence } from '../sequence.js';

export interface BeamCandidate {
  readonly token: number;
  readonly logprob: number;
}

export interface BeamSearchOptions {
  /** Beams kept (W). */
  readonly width: number;
  readonly lengthPenalty: number;
  readonly earlyStopping: boolean | 'never';
  /** Output tokens at most: a candidate that reaches it ends its beam. */
  readonly maxNew: number;
  /** Before this many output tokens, end tokens are not candidates. */
  readonly minTokens: number;
  /** Tokens that end a beam: end-of-sequence (unless ignore_eos) and stop token ids. */
  readonly endTokens: ReadonlySet<number>;
  /** Whether output tokens end in a stop string (null: the request has none). */
  readonly stopsAt: ((tokens: readonly number[]) => boolean) | null;
  /** Alternatives to keep per token for the caller's top logprobs (0: none). */
  readonly keepAlternatives: number;
}

/** A beam's output so far. */
export interface BeamPath {
  readonly tokens: readonly number[];
  readonly logprobs: readonly number[];
  /** Per token, its best alternatives (when the caller asked for top logprobs). */
  readonly alternatives: readonly (readonly BeamCandidate[])[];
  /** Accumulated logprob. */
  readonly cum: number;
}

export interface FinishedBeam extends BeamPath {
  readonly score: number;
}

/** What one advance did: the beams that go on (each grew by `token`) and the ones dropped. */
export interface BeamAdvance {
  readonly continued: readonly { readonly seq: Sequence; readonly token: number }[];
  readonly dropped: readonly Sequence[];
}

interface Ranked {
  readonly seq: Sequence;
  readonly path: BeamPath;
  readonly candidate: BeamCandidate;
  readonly alternatives: readonly BeamCandidate[];
  readonly acc: number;
  readonly order: number;
}

/** Candidates each beam's step must report (its top logprobs): K, plus room for the end tokens `minTokens` removes. */
export function candidatesPerBeam(o: BeamSearchOptions): number {
  const k = keptCandidates(o);
  return o.minTokens > 0 ? k + o.endTokens.size : k;
}

/** HF's K: the candidates kept each round, so that W can continue whatever ends. */
function keptCandidates(o: BeamSearchOptions): number {
  return Math.max(2, 1 + o.endTokens.size) * o.width;
}

export class BeamSearch {
  /** Live beams and their paths, best first. */
  private live = new Map<Sequence, BeamPath>();
  private readonly reports = new Map<Sequence, readonly BeamCandidate[]>();
  /** The finished beams, best first (at most `width`). */
  readonly finished: FinishedBeam[] = [];
  /** HF's is_early_stop_heuristic_unsatisfied: a running beam may still beat a finished one. */
  private improvable = true;
  /** Output tokens of every live beam (they advance together). */
  private generated = 0;
  done = false;

  constructor(
    private readonly o: BeamSearchOptions,
    first: Sequence,
  ) {
    this.live.set(first, { tokens: [], logprobs: [], alternatives: [], cum: 0 });
  }

  /** The live beams. */
  get beams(): Sequence[] {
    return [...this.live.keys()];
  }

  /** A live beam's step sampled these candidates (its top logprobs, best first). */
  report(seq: Sequence, candidates: readonly BeamCandidate[]): void {
    if (this.live.has(seq)) this.reports.set(seq, candidates);
  }

  /** Every live beam has reported: the beams can advance. */
  get roundComplete(): boolean {
    return !this.done && this.live.size > 0 && this.reports.size === this.live.size;
  }

  /**
   * Chooses the next beams. `fork(parent)` makes a new live sequence sharing `parent`'s
   * tokens and blocks (for a parent that two continuations keep); it is called before any
   * token is pushed.
   */
  advance(fork: (parent: Sequence) => Sequence): BeamAdvance {
    const { width: W, lengthPenalty: lp } = this.o;
    const genAfter = this.generated + 1;
    const top = this.rank().slice(0, keptCandidates(this.o));
    const ends = top.map((c) => this.ends(c, genAfter));
    const running = top.filter((_, i) => !ends[i]).slice(0, W);

    // Finished beams come from the best W ranks only, unless no more may be added.
    const full = this.finished.length === W;
    if (!(full && this.o.earlyStopping === true) && this.improvable) {
      top.slice(0, W).forEach((c, i) => {
        if (ends[i]) this.addFinished({ ...extend(c), score: c.acc / genAfter ** lp });
      });
    }
    this.generated = genAfter;
    if (this.improvable && this.finished.length === W && running.length > 0) {
      const len = this.o.earlyStopping === 'never' && lp > 0 ? this.o.maxNew : this.generated;
      this.improvable = running[0].acc / len ** lp > this.finished[W - 1].score;
    }
    this.done =
      running.length === 0 ||
      !this.improvable ||
      (this.finished.length === W && this.o.earlyStopping === true);
    this.reports.clear();

    const before = this.live;
    this.live = new Map();
    const continued: { seq: Sequence; token: number }[] = [];
    if (!this.done) {
      const used = new Set<Sequence>();
      for (const c of running) {
        const seq = used.has(c.seq) ? fork(c.seq) : c.seq;
        used.add(c.seq);
        this.live.set(seq, extend(c));
        continued.push({ seq, token: c.candidate.token });
      }
    }
    const dropped = [...before.keys()].filter((s) => !this.live.has(s));
    return { continued, dropped };
  }

  /**
   * The beams to return, best first: the finished ones, then (when the search was cut short
   * with fewer finished than asked for) the best live ones.
   */
  results(n: number): BeamPath[] {
    const out: BeamPath[] = this.finished.slice(0, n);
    for (const path of this.live.values()) if (out.length < n) out.push(path);
    return out;
  }

  /** All candidates of this round, by accumulated logprob (ties: beam order, then rank). */
  private rank(): Ranked[] {
    const all: Ranked[] = [];
    const banEnds = this.generated < this.o.minTokens;
    for (const [seq, path] of this.live) {
      const candidates = this.reports.get(seq) ?? [];
      for (const candidate of candidates) {
        if (banEnds && this.o.endTokens.has(candidate.token)) continue;
        const alternatives = this.o.keepAlternatives > 0 ? candidates.slice(0, this.o.keepAlternatives) : [];
        all.push({
          seq,
          path,
          candidate,
          alternatives,
          acc: path.cum + candidate.logprob,
          order: all.length,
        });
      }
    }
    return all.sort((a, b) => b.acc - a.acc || a.order - b.order);
  }

  private ends(c: Ranked, genAfter: number): boolean {
    if (this.o.endTokens.has(c.candidate.token) || genAfter >= this.o.maxNew) return true;
    return this.o.stopsAt !== null && this.o.stopsAt([...c.path.tokens, c.candidate.token]);
  }

  /** Keeps the best `width` finished beams; an equal score does not displace an earlier one. */
  private addFinished(beam: FinishedBeam): void {
    let i = this.finished.length;
    while (i > 0 && this.finished[i - 1].score < beam.score) i--;
    this.finished.splice(i, 0, beam);
    if (this.finished.length > this.o.width) this.finished.pop();
  }
}

function extend(c: Ranked): BeamPath {
  return {
    tokens: [...c.path.tokens, c.candidate.token],
    logprobs: [...c.path.logprobs, c.candidate.logprob],
    alternatives: c.alternatives.length > 0 ? [...c.path.alternatives, c.alternatives] : c.path.alternatives,
    cum: c.acc,
  };
}
