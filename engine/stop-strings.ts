/**
 * Stop strings over streamed text. Text that could still turn out to be the start of a stop
 * string is held back, so a stop string never leaks partially into the stream; once a stop
 * string appears, everything from it on is dropped (or kept through its end when the
 * caller asked for include_stop_str_in_output).
 */
export class StopStringMatcher {
  private held = '';
  private readonly longest: number;

  constructor(
    private readonly stops: readonly string[],
    private readonly includeStop = false,
  ) {
    this.longest = stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** Feeds new text; returns what may be emitted now and whether a stop string was hit. */
  push(delta: string): { text: string; stopped: boolean } {
    if (this.stops.length === 0) return { text: delta, stopped: false };
    const buf = this.held + delta;
    let at = -1;
    let hit = '';
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        hit = s;
      }
    }
    if (at >= 0) {
      this.held = '';
      return { text: buf.slice(0, this.includeStop ? at + hit.length : at), stopped: true };
    }
    const keep = this.partialSuffix(buf);
    this.held = buf.slice(buf.length - keep);
    return { text: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** The text still held back (at the end of generation it is no longer a stop-string risk). */
  flush(): string {
    const t = this.held;
    this.held = '';
    return t;
  }

  /** Length of the longest suffix of `buf` that is a proper prefix of some stop string. */
  private partialSuffix(buf: string): number {
    for (let len = Math.min(this.longest - 1, buf.length); len > 0; len--) {
      const suffix = buf.slice(buf.length - len);
      if (this.stops.some((s) => s.startsWith(suffix))) return len;
    }
    return 0;
  }
}
