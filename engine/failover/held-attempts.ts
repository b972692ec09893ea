/**
 * The attempts one engine holds, as a front (the pool, the coordinator) keeps them, and what
 * happens to them when the health monitor finds the engine stopped (no answer, a stuck step):
 * those that would be retried elsewhere are abandoned at once; the others — their client
 * already has output, or no engine is left for them — wait for it, since a stopped process
 * may be continued, but no longer than `graceMs`, after which they fail with the outage's
 * reason. An engine that answers again ends the wait.
 */
import type { Attempt } from './retry.js';

export class HeldAttempts {
  readonly attempts = new Set<Attempt>();
  private patience: ReturnType<typeof setTimeout> | undefined;

  get size(): number {
    return this.attempts.size;
  }

  add(a: Attempt): void {
    this.attempts.add(a);
  }

  delete(a: Attempt): void {
    this.attempts.delete(a);
  }

  /** The engine stopped answering; returns the line for the front's log. */
  stopped(why: string, graceMs: number, log: (line: string) => void): string {
    const held = this.attempts.size;
    const moved = this.abandon(why, false);
    clearTimeout(this.patience);
    this.patience = setTimeout(() => {
      const n = this.abandon(why, true);
      if (n > 0) log(`${why}: still out after ${graceMs} ms; its ${n} waiting request(s) failed`);
    }, graceMs);
    this.patience.unref();
    return held > 0 ? `; ${moved} of its ${held} request(s) sent elsewhere, the rest wait for it` : '';
  }

  /** It answers again: nothing more is abandoned. */
  back(): void {
    clearTimeout(this.patience);
    this.patience = undefined;
  }

  private abandon(why: string, all: boolean): number {
    let n = 0;
    for (const a of this.attempts) {
      if (!all && !a.wouldRetry) continue;
      a.abandon(why);
      n++;
    }
    return n;
  }
}
