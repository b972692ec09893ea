/**
 * Loads `@mlc-ai/web-xgrammar` (xgrammar compiled to WebAssembly). Its package is
 * `"type":"module"` but its main file is a UMD bundle that assigns to `exports`, so neither
 * `import` nor `require` can load it as shipped. We evaluate the bundle ourselves as the
 * CommonJS module it is (a `module`/`exports` pair and a real `require` rooted at the file),
 * which is what `require` would do for a `.cjs` copy, without copying anything at run time.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type * as XGrammar from '@mlc-ai/web-xgrammar';

export type XGrammarModule = typeof XGrammar;

let loaded: XGrammarModule | null = null;

export function loadXGrammar(): XGrammarModule {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const file = require.resolve('@mlc-ai/web-xgrammar');
  const source = readFileSync(file, 'utf8');
  const module = { exports: {} as Record<string, unknown> };
  const factory = new Function('exports', 'module', 'require', '__filename', '__dirname', source) as (
    ...args: unknown[]
  ) => void;
  factory(module.exports, module, createRequire(file), file, dirname(file));
  loaded = module.exports as unknown as XGrammarModule;
  return loaded;
}
