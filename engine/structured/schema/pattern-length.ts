/**
 * `pattern` with `minLength`/`maxLength`, where the two can be one pattern.
 *
 * xgrammar drops length limits beside a `pattern` (check.ts refuses the pair). The common
 * case is a pattern that is one character class repeated over the whole string,
 * `^[a-zA-Z0-9_.]+$` with `maxLength: 12`: a class matches exactly one character (one code
 * point, which is what JSON Schema's lengths count), so the limits fold into the repetition,
 * `^[a-zA-Z0-9_.]{1,12}$`. Only that shape is folded; any other pattern beside a length limit
 * stays refused.
 */

/** One atom that matches exactly one character: a class, an escape class, or `.`. */
const ATOM = String.raw`(\[(?:[^\]\\]|\\.)+\]|\\[dDwWsS]|\.)`;
/** `^atom quantifier$`, the quantifier `+`, `*`, `{n}`, `{n,}` or `{n,m}`. */
const REPEATED_ATOM = new RegExp(String.raw`^\^${ATOM}(\+|\*|\{(\d+)(,(\d*))?\})\$$`);

/** `s`'s `pattern` with its `minLength`/`maxLength` folded in; null when it has no such pair. */
export function foldSchemaLengths(s: Record<string, unknown>): FoldedPattern {
  if (typeof s.pattern !== 'string' || (s.minLength === undefined && s.maxLength === undefined)) return null;
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  return foldLengthIntoPattern(s.pattern, num(s.minLength), num(s.maxLength));
}

export type FoldedPattern = { readonly pattern: string } | { readonly empty: true } | null;

/**
 * The one pattern that means `pattern` ∧ the length limits, `{empty: true}` when no string
 * meets both, or null when the pattern is not a repeated single-character atom.
 */
export function foldLengthIntoPattern(
  pattern: string,
  minLength: number | undefined,
  maxLength: number | undefined,
): FoldedPattern {
  const m = REPEATED_ATOM.exec(pattern);
  if (!m) return null;
  const [, atom, quant, exact, comma, upper] = m;
  let lo: number;
  let hi: number;
  if (quant === '+') [lo, hi] = [1, Infinity];
  else if (quant === '*') [lo, hi] = [0, Infinity];
  else {
    lo = Number(exact);
    hi = comma === undefined ? lo : upper ? Number(upper) : Infinity;
  }
  lo = Math.max(lo, minLength ?? 0);
  hi = Math.min(hi, maxLength ?? Infinity);
  if (lo > hi) return { empty: true };
  const times = hi === Infinity ? `{${lo},}` : lo === hi ? `{${lo}}` : `{${lo},${hi}}`;
  return { pattern: `^${atom}${times}$` };
}
