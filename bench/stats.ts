/**
 * Small statistics helpers shared by the benchmarks: medians over repeated runs and the
 * ratio/percentage formatting the reports print. Kept apart from any engine so that the
 * gRPC and HTTP benchmarks can reuse them.
 */

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median: needs at least one value');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Smallest and largest value, for showing the spread next to a median. */
export function range(values: readonly number[]): { min: number; max: number } {
  if (values.length === 0) throw new RangeError('range: needs at least one value');
  return { min: Math.min(...values), max: Math.max(...values) };
}

/** `numerator / denominator`, or NaN when either side is missing or the denominator is 0. */
export function ratio(numerator: number | undefined, denominator: number | undefined): number {
  if (numerator === undefined || denominator === undefined || denominator === 0) return NaN;
  return numerator / denominator;
}

/**
 * Decode as a percentage of the bandwidth roofline, run by run: each run's tok/s against the
 * roofline of the bandwidth probed just before it (GB/s ÷ bytes read per token), then the
 * median. A median decode over a median bandwidth can pair one minute's decode with another
 * minute's bandwidth and read over 100% on a machine whose bandwidth swings.
 */
export function pairedRooflinePercent(
  tokPerSec: readonly number[],
  bandwidthGBs: readonly number[],
  bytesPerToken: number,
): number {
  if (tokPerSec.length !== bandwidthGBs.length)
    throw new RangeError(`pairedRooflinePercent: ${tokPerSec.length} runs but ${bandwidthGBs.length} probes`);
  return median(tokPerSec.map((v, i) => (v * bytesPerToken) / (bandwidthGBs[i] * 1e9))) * 100;
}

/** Fixed-point number for a table cell; '—' for NaN/undefined. */
export function fmt(value: number | undefined, digits = 1): string {
  return value === undefined || Number.isNaN(value) ? '—' : value.toFixed(digits);
}

/** Number of leading elements two sequences share. */
export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Nanosecond clock read as milliseconds (monotonic; not affected by wall-clock changes). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Nearest-rank percentile (p in 0..100) of a list; NaN for an empty one. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * A distribution-free interval for the median of `values` (order statistics): the k-th
 * smallest and k-th largest value, k the largest rank with P(Binomial(n, ½) < k) ≤ (1 - level)/2,
 * so that the median lies between them with at least `level` confidence, whatever the
 * values' distribution. null when n is too small for the level (fewer than 6 values at 95%).
 */
export function medianInterval(values: readonly number[], level = 0.95): { lo: number; hi: number } | null {
  const n = values.length;
  const tail = (1 - level) / 2;
  // cdf: P(X ≤ j) for X ~ Binomial(n, ½), summed term by term.
  let term = Math.pow(0.5, n);
  let below = 0; // P(X < k) for the k being tried
  let k = 0;
  for (let j = 0; j < n; j++) {
    if (below + term > tail) break;
    below += term;
    k = j + 1;
    term = (term * (n - j)) / (j + 1);
  }
  if (k < 1) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { lo: sorted[k - 1], hi: sorted[n - k] };
}
