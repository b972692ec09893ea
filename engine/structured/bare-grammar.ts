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
