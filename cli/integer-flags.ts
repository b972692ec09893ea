/**
 * Integer-valued flags (milliseconds, mostly) read into an options record: each given flag
 * must be a whole number in its range, else the usage error names the flag and the range.
 */
export function integerFlags<K extends string>(
  values: Readonly<Record<string, string | undefined>>,
  table: readonly (readonly [flag: string, key: K])[],
  [lo, hi]: readonly [number, number],
  error: (message: string) => Error,
): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  for (const [flag, key] of table) {
    const v = values[flag];
    if (v === undefined) continue;
    if (!/^\d+$/.test(v) || Number(v) < lo || Number(v) > hi)
      throw error(`--${flag}: must be an integer in [${lo}, ${hi}], got '${v}'`);
    out[key] = Number(v);
  }
  return out;
}
