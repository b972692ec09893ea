/**
 * For tests: grammars compiled against a one-symbol vocabulary, and whether a grammar takes a
 * whole text (accepted character by character, then at its end). What a grammar allows does
 * not depend on the vocabulary, so this checks the grammar itself, fast.
 */
import {
  loadGrammarAddon,
  type CompiledGrammarHandle,
  type GrammarCompilerHandle,
} from '../../native/native.js';

const xg = loadGrammarAddon();
let compiler: GrammarCompilerHandle | null = null;

export function bareCompiler(): GrammarCompilerHandle {
  compiler ??= xg.createCompiler(xg.createTokenizerInfo(['a'], 'raw', false, 1, [0]), 1);
  return compiler;
}

export function grammarAccepts(grammar: CompiledGrammarHandle, text: string): boolean {
  const m = xg.createMatcher(grammar, true);
  try {
    return xg.acceptString(m, text) && xg.isTerminated(m);
  } finally {
    xg.dispose(m);
  }
}

/**
 * Integers around a bound, for range tests: every digit position set to 0-9 under the bound's
 * prefix (with 0s, 9s or the bound's own digits after it), the neighbours, and the negated bound.
 */
export function around(bound: bigint): bigint[] {
  const digits = (bound < 0n ? -bound : bound).toString();
  const sign = bound < 0n ? -1n : 1n;
  const out = new Set<bigint>([0n, 1n, -1n]);
  for (let i = 0; i < digits.length; i++)
    for (let d = 0; d <= 9; d++)
      for (const tail of [
        '0'.repeat(digits.length - i - 1),
        '9'.repeat(digits.length - i - 1),
        digits.slice(i + 1),
      ])
        out.add(sign * BigInt(digits.slice(0, i) + d + tail));
  for (let k = -12n; k <= 12n; k++) out.add(bound + k);
  out.add(sign * BigInt('1' + '0'.repeat(digits.length)));
  out.add(-sign * BigInt(digits));
  return [...out];
}

/** The printable ASCII characters, one token each, then a stop token: for walking a grammar. */
const ASCII = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
let asciiCompiler: GrammarCompilerHandle | null = null;

/** A compiler over the printable ASCII characters (token i = char 32 + i) and a stop token. */
export function asciiGrammarCompiler(): GrammarCompilerHandle {
  asciiCompiler ??= xg.createCompiler(
    xg.createTokenizerInfo([...ASCII, '</s>'], 'raw', false, ASCII.length + 1, [ASCII.length]),
    1,
  );
  return asciiCompiler;
}

/**
 * A random document of `grammar` (compiled by `asciiGrammarCompiler`): characters drawn from
 * each step's mask by `random` (closing characters favoured as the text grows, so walks end),
 * until the grammar takes the stop token; null when it has not within `maxChars`.
 */
export function sampleDocument(
  grammar: CompiledGrammarHandle,
  random: () => number,
  maxChars = 400,
): string | null {
  const stop = ASCII.length;
  const m = xg.createMatcher(grammar, false);
  const mask = new Int32Array(xg.bitmaskSize(ASCII.length + 1));
  let text = '';
  try {
    for (;;) {
      xg.fillNextTokenBitmask(m, mask);
      const allowed: number[] = [];
      for (let t = 0; t <= stop; t++) if ((mask[t >> 5]! >>> (t & 31)) & 1) allowed.push(t);
      if (allowed.length === 0) return null;
      if (allowed.includes(stop) && (text.length > maxChars / 4 || random() < 0.3)) return text;
      if (text.length >= maxChars) return null;
      const closing = allowed.filter((t) => t !== stop && '"}],'.includes(ASCII[t]!));
      const pool =
        closing.length > 0 && random() < Math.min(0.9, 0.2 + text.length / maxChars)
          ? closing
          : allowed.filter((t) => t !== stop);
      if (pool.length === 0) return allowed.includes(stop) ? text : null;
      const t = pool[Math.floor(random() * pool.length)]!;
      if (!xg.acceptToken(m, t)) return null;
      text += ASCII[t];
    }
  } finally {
    xg.dispose(m);
  }
}
