/**
 * What a fault did, read from the soak's request records: for each fault, the requests it
 * touched (in flight at its signal, or started before its engine was back and ten seconds
 * after; a request that lived through several faults counts with each), how each ended — recovered on another engine (`x-prism-retries`), completed
 * unaffected, failed with a clear error (and whether before or after the client had a byte of
 * the answer), lost (a stream without its final event, or no reply), answered twice — and the
 * gap in service: the longest time, from the signal to the end of that window, in which no
 * client received any output.
 */
import type { FaultEvent } from './faults.js';
import type { RequestRecord } from './send.js';

/** After an engine is back, its fault's window stays open this long (requests sent meanwhile count). */
const WINDOW_TAIL_MS = 10_000;

export interface Tally {
  /** Requests counted. */
  readonly requests: number;
  readonly completed: number;
  /** Completed after the gateway sent them to another engine. */
  readonly retriedRecovered: number;
  /** Sent again, then failed anyway (no engine left, or the retry failed too). */
  readonly retriedFailed: number;
  /** Failed with a clear error (the family's error body or event). */
  readonly failedClear: number;
  /** Of those, failed before the client had any byte of the answer (non-200). */
  readonly failedBeforeOutput: number;
  /** Of those, failed while an engine they had not been sent to was left: a retry could have saved them. */
  readonly failedUntried: number;
  /** Failed without a clear error. */
  readonly failedUnclear: number;
  /** Never answered: a stream that ended without its final event, or no reply at all. */
  readonly lost: number;
  /** Got part of the answer twice. */
  readonly duplicated: number;
  /** Cut by their client or stopped with stopInfer on purpose. */
  readonly deliberate: number;
}

export interface FaultOutcome extends FaultEvent {
  /** Requests in flight at the signal. */
  readonly inFlight: number;
  /** The requests of the fault's window, by outcome. */
  readonly tally: Tally;
  /** Longest stretch without output to any client, from the signal to the window's end (ms). */
  readonly serviceGapMs: number;
  /** A few failures, for the report. */
  readonly examples: readonly string[];
}

const failed = (r: RequestRecord): boolean => r.outcome.startsWith('status:');

/** `engines`: how many engines a request could be sent to (a failure with fewer tries had one left). */
export function tally(records: readonly RequestRecord[], engines: number): Tally {
  let completed = 0,
    retriedRecovered = 0,
    retriedFailed = 0,
    failedClear = 0,
    failedBeforeOutput = 0,
    failedUntried = 0,
    failedUnclear = 0,
    lost = 0,
    duplicated = 0,
    deliberate = 0;
  for (const r of records) {
    if (r.duplicated) duplicated++;
    if (r.outcome === 'completed') {
      completed++;
      if (r.retries > 0) retriedRecovered++;
    } else if (r.outcome === 'disconnect' || r.outcome === 'stopped') deliberate++;
    else if (r.outcome === 'lost' || r.outcome === 'transport') lost++;
    else if (failed(r)) {
      if (r.retries > 0) retriedFailed++;
      if (r.clearError) failedClear++;
      else failedUnclear++;
      if (r.clearError && r.outcome !== 'status:event') {
        failedBeforeOutput++;
        if (r.retries + 1 < engines) failedUntried++;
      }
    }
  }
  return {
    requests: records.length,
    completed,
    retriedRecovered,
    retriedFailed,
    failedClear,
    failedBeforeOutput,
    failedUntried,
    failedUnclear,
    lost,
    duplicated,
    deliberate,
  };
}

/** The longest interval without output in [from, to], counting from `from` (times sorted). */
export function longestGap(outputTimes: readonly number[], from: number, to: number): number {
  let last = from;
  let gap = 0;
  for (const t of outputTimes) {
    if (t < from) continue;
    if (t > to) break;
    gap = Math.max(gap, t - last);
    last = t;
  }
  return Math.max(gap, to - last);
}

/**
 * Each fault with its requests: those in flight at its signal or started in its window, which
 * runs from the signal until ten seconds after its engine was back (or the next fault's
 * signal, if sooner). A request that lived through several faults is counted with each (the
 * run's totals count it once). `outputTimes` sorted; `end`: when the soak's clients stopped;
 * `engines`: as for `tally`.
 */
export function faultOutcomes(
  faults: readonly FaultEvent[],
  records: readonly RequestRecord[],
  outputTimes: readonly number[],
  end: number,
  engines: number,
): FaultOutcome[] {
  return faults.map((f, i) => {
    const windowEnd = Math.min(end, (f.recoveredAt ?? end) + WINDOW_TAIL_MS, faults[i + 1]?.at ?? Infinity);
    const mine = records.filter((r) => r.endedAt >= f.at && r.startedAt <= windowEnd);
    const bad = mine.filter(
      (r) =>
        r.duplicated || (r.outcome !== 'completed' && r.outcome !== 'disconnect' && r.outcome !== 'stopped'),
    );
    return {
      ...f,
      inFlight: mine.filter((r) => r.startedAt <= f.at).length,
      tally: tally(mine, engines),
      serviceGapMs: longestGap(outputTimes, f.at, windowEnd),
      examples: bad
        .slice(0, 4)
        .map(
          (r) =>
            `${r.outcome}${r.retries ? ` after ${r.retries} retry` : ''}: ${r.duplicated ?? r.detail ?? ''}`,
        ),
    };
  });
}
