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
