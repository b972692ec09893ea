/**
 * Joining a retried request to what its first engine already handed over. A request sent
 * again with the same seed generates the same tokens (the sampler's random stream is a pure
 * function of seed and position, native/native.ts), so when the caller had been given some
 * events that never reached its client (a unary answer being collected), the new engine's
 * first tokens repeat them: the guard drops that repeated prefix — checking it token by token
 * and text by text — and passes on what is new, so the caller sees every token once.
 *
 * An event of the new attempt that straddles the joint (the engines grouped tokens
 * differently, e.g. speculative decoding accepted a different run) is cut at the joint; one
 * whose parsed chat deltas would have to be cut is refused, as is any difference in the
 * repeated prefix: both fail the request with a clear error rather than hand over a wrong
 * answer.
 */
import { EngineError } from '../errors.js';
import type { GenerateEvent, TokenEvent } from '../types.js';

/** What one choice (sequence index) handed over so far, or produced so far in this attempt. */
interface Progress {
  tokenIds: number[];
  text: string;
  finished: boolean;
}

const fresh = (): Progress => ({ tokenIds: [], text: '', finished: false });

export class ReplayGuard {
  /** What the caller has been given, by choice index. */
  private readonly given = new Map<number, Progress>();
  /** What had been given when the current attempt started (null: the first attempt). */
  private joint: Map<number, Progress> | null = null;
  /** What the current attempt produced so far, by choice index. */
  private replayed = new Map<number, Progress>();

  /** True once any event has been handed over. */
  get handedOver(): boolean {
    return this.given.size > 0;
  }

  /** A new attempt starts: its events are matched against what was handed over. */
  nextAttempt(): void {
    this.joint = new Map(
      [...this.given].map(([i, g]) => [i, { tokenIds: [...g.tokenIds], text: g.text, finished: g.finished }]),
    );
    this.replayed = new Map();
  }

  /** The event to hand over for `ev` of the current attempt, or null when it repeats what was given. */
  pass(ev: GenerateEvent): GenerateEvent | null {
    const joint = this.joint?.get(ev.index);
    if (!joint) return this.give(ev);
    let r = this.replayed.get(ev.index);
    if (!r) this.replayed.set(ev.index, (r = fresh()));
    const have = joint.tokenIds.length;
    if (ev.type === 'finish') {
      if (r.tokenIds.length < have) this.diverged(ev.index, 'it ended sooner');
      if (!joint.finished) return this.give(ev);
      if (ev.text !== joint.text) this.diverged(ev.index, 'its text differs');
      return null;
    }
    const before = r.tokenIds.length;
    r.tokenIds.push(...ev.tokenIds);
    r.text += ev.text;
    if (before >= have) return joint.finished ? null : this.give(ev);
    const overlap = Math.min(ev.tokenIds.length, have - before);
    for (let i = 0; i < overlap; i++)
      if (ev.tokenIds[i] !== joint.tokenIds[before + i])
        this.diverged(
          ev.index,
          `token ${before + i} is ${ev.tokenIds[i]}, the first engine's was ${joint.tokenIds[before + i]}`,
        );
    if (overlap === ev.tokenIds.length) {
      // Text may lag its tokens (a character split over two tokens), the same way on both engines.
      if (!joint.text.startsWith(r.text)) this.diverged(ev.index, 'its text differs');
      return null;
    }
    if (!r.text.startsWith(joint.text)) this.diverged(ev.index, 'its text differs');
    if (ev.chat)
      this.diverged(ev.index, 'a parsed chat delta spans the point where the first engine stopped');
    const rest: TokenEvent = {
      ...ev,
      tokenIds: ev.tokenIds.slice(overlap),
      text: r.text.slice(joint.text.length),
      ...(ev.logprobs ? { logprobs: ev.logprobs.slice(overlap) } : {}),
    };
    return this.give(rest);
  }

  private give(ev: GenerateEvent): GenerateEvent {
    let g = this.given.get(ev.index);
    if (!g) this.given.set(ev.index, (g = fresh()));
    if (ev.type === 'token') {
      g.tokenIds.push(...ev.tokenIds);
      g.text += ev.text;
    } else {
      g.finished = true;
      g.text = ev.text;
    }
    return ev;
  }

  private diverged(index: number, why: string): never {
    throw new EngineError(
      'GENERATION_FAILED',
      `the request was sent again after its engine failed, and choice ${index} of the new answer ` +
        `does not repeat what the first engine had generated (${why}); it is failed rather than answered twice`,
    );
  }
}
