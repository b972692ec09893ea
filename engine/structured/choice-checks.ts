/**
 * The check of each choice a grammar completes where the grammar enforces the constraint only
 * in part (a JSON Schema with keywords no grammar expresses, or a forced tool call's
 * parameters; schema/prepare.ts): structured output hands every finished choice here, and
 * a choice whose output must be checked holds its request open until the check answers
 * (`ChoiceCheckHost.verify`, on the grammar thread). A choice that fails is sampled again from
 * the prompt, up to MAX_ATTEMPTS in all, attempt k with the seed `resampleSeed(seed, k)`; out
 * of attempts it ends with reason `error` and a message naming what failed. Documents cut by
 * the length limit are not checked (they are incomplete, and reported so).
 */
import { matcherOf } from './grammar-backend.js';
import type { ChoiceOutput } from '../choice-output.js';
import type { Sequence } from '../sequence.js';

/** Attempts per choice, the first included. */
export const MAX_ATTEMPTS = 3;

const U64 = (1n << 64n) - 1n;

/**
 * The sampling seed of attempt `attempt` (1, 2, ...) of a choice first sampled with `seed`: a
 * fixed odd multiple of the attempt added, so attempts neither repeat the first nor land on a
 * best_of sibling's seed (those are seed + i for small i), and the same request gives the
 * same attempts.
 */
export function resampleSeed(seed: bigint, attempt: number): bigint {
  return (seed + BigInt(attempt) * 0x9e3779b97f4a7c15n) & U64;
}

/** What the checks need: the grammars whose outputs are checked, the check, a restart, a finish. */
export interface ChoiceCheckHost<R> {
  /** Whether `req` is still live (not cancelled or failed meanwhile). */
  isLive(req: R): boolean;
  /** Whether outputs of grammar `key` are checked when a choice ends. */
  holdsOutput(key: string): boolean;
  /** Null when the output of choice `c` of `seq` stands; else why not. */
  verify(seq: Sequence, c: ChoiceOutput): Promise<string | null>;
  /** Samples choice `index` of `req` again from its prompt with `seed`. */
  restart(req: R, index: number, seed: bigint): void;
  /** A check of `req` answered: finish it if every choice has finished and none is pending. */
  settled(req: R): void;
}

export class ChoiceChecks<R extends { readonly id: string }> {
  /** Checks in flight, by request id. */
  private readonly pending = new Map<string, number>();
  /** Attempts made so far, by request id and choice index. */
  private readonly attempts = new Map<string, number>();
  /** Choices sampled again after their output failed its check. */
  resampled = 0;
  /** Choices that failed the check on every attempt (their request failed). */
  failed = 0;
  constructor(private readonly host: ChoiceCheckHost<R>) {}

  /**
   * Choice `c` of `req`, sampled by `seq`, has just finished. True when its output must be
   * checked first: the check is under way, and the host hears of it (`settled`/`restart`).
   */
  afterFinish(req: R, seq: Sequence, c: ChoiceOutput): boolean {
    if (c.reason !== 'stop' && c.reason !== 'tool_calls') return false;
    const key = matcherOf(seq)?.key;
    if (key === undefined || !this.host.holdsOutput(key)) return false;
    this.pending.set(req.id, (this.pending.get(req.id) ?? 0) + 1);
    void this.host
      .verify(seq, c)
      .catch((e: unknown) => `the output could not be checked: ${(e as Error).message}`)
      .then((invalid) => this.answered(req, c, invalid));
    return true;
  }

  /** Whether a check of `req` is still in flight. */
  checking(req: R): boolean {
    return (this.pending.get(req.id) ?? 0) > 0;
  }

  /** `req` has finished: its counters go. */
  forget(req: R): void {
    this.pending.delete(req.id);
    for (const k of this.attempts.keys()) if (k.startsWith(`${req.id}\u0000`)) this.attempts.delete(k);
  }

  private answered(req: R, c: ChoiceOutput, invalid: string | null): void {
    const left = (this.pending.get(req.id) ?? 1) - 1;
    if (left > 0) this.pending.set(req.id, left);
    else this.pending.delete(req.id);
    if (!this.host.isLive(req)) return;
    if (invalid !== null) {
      const k = `${req.id}\u0000${c.index}`;
      const attempt = (this.attempts.get(k) ?? 1) + 1;
      if (attempt <= MAX_ATTEMPTS) {
        this.attempts.set(k, attempt);
        this.resampled++;
        this.host.restart(req, c.index, resampleSeed(BigInt(c.seed), attempt - 1));
        return;
      }
      this.failed++;
      c.reason = 'error';
      c.error = `the output does not satisfy the schema after ${MAX_ATTEMPTS} attempts (the grammar enforces it only in part; the rest is checked): ${invalid}`;
    }
    this.host.settled(req);
  }
}
