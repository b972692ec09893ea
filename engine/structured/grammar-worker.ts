/**
 * The grammar thread: owns xgrammar (WebAssembly) — the tokenizer info, the compile cache
 * and every sequence's matcher — so that compiling (milliseconds to seconds) never runs on
 * the event loop. xgrammar objects live in this thread's WebAssembly memory and cannot be
 * moved to another thread, which is why the matchers live here too: the engine sends each
 * sampled token, this thread advances the matcher and answers with the next step's mask.
 *
 * Protocol (requests carry an `id`; every answer echoes it): see `WorkerRequest`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { CompiledGrammar, GrammarCompiler, GrammarMatcher, TokenizerInfo } from '@mlc-ai/web-xgrammar';
import { choiceGrammar, type GrammarConstraint } from './constraint.js';
import { rewriteForGrammar } from './schema-rewrite.js';
import { loadXGrammar } from './xgrammar.js';

export interface GrammarWorkerInit {
  readonly tokens: readonly string[];
  readonly vocabType: 'byte_level' | 'byte_fallback' | 'raw';
  readonly prependSpace: boolean;
  /** Rows of the model's logits (may exceed the tokenizer's vocabulary). */
  readonly vocabSize: number;
  readonly stopTokenIds: readonly number[];
  /** Compiled grammars kept (least recently used evicted). */
  readonly cacheSize: number;
}

export type WorkerRequest =
  | {
      readonly op: 'compile';
      readonly id: number;
      readonly key: string;
      readonly constraint: GrammarConstraint;
    }
  /** `jump`: also answer each step with the string the grammar forces next (jump-forward). */
  | {
      readonly op: 'create';
      readonly id: number;
      readonly key: string;
      readonly matcher: number;
      readonly jump: boolean;
    }
  /** Tokens in order: a sampled one, then any appended by jump-forward. */
  | {
      readonly op: 'accept';
      readonly id: number;
      readonly matcher: number;
      readonly tokens: readonly number[];
    }
  | { readonly op: 'free'; readonly id: number; readonly matcher: number };

export type WorkerReply =
  /** A compile left the queue and started (not a final answer). */
  | { readonly id: number; readonly started: true }
  | { readonly id: number; readonly ok: true; readonly ms?: number; readonly cached?: boolean }
  | {
      readonly id: number;
      readonly ok: true;
      /** The token was accepted; the matcher has ended (stop token taken); next mask. */
      readonly accepted: boolean;
      readonly terminated: boolean;
      readonly mask: Int32Array;
      readonly maskMs: number;
      /** What the grammar forces next ('' when it allows a choice, or jump is off). */
      readonly jump: string;
    }
  | { readonly id: number; readonly ok: false; readonly error: string };

const xg = loadXGrammar();
const init = workerData as GrammarWorkerInit;
let compiler: GrammarCompiler | null = null;
let info: TokenizerInfo | null = null;
const cache = new Map<string, CompiledGrammar>();
const matchers = new Map<number, { readonly m: GrammarMatcher; readonly jump: boolean }>();

async function getCompiler(): Promise<GrammarCompiler> {
  if (compiler) return compiler;
  info = await xg.TokenizerInfo.createTokenizerInfo(
    [...init.tokens],
    init.vocabType,
    init.prependSpace,
    init.vocabSize,
    [...init.stopTokenIds],
  );
  // xgrammar's own cache is off: ours is keyed by canonical text and bounded.
  compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  return compiler;
}

async function compileConstraint(c: GrammarConstraint): Promise<CompiledGrammar> {
  const gc = await getCompiler();
  switch (c.kind) {
    case 'json_object':
      // Any object: no strict mode, so any properties may appear.
      return gc.compileJSONSchema('{"type":"object"}', false, -1, undefined, false);
    case 'json_schema':
      // One line with `, ` and `: ` (JSON.stringify's layout with spaces): keys and
      // punctuation are then forced strings that jump-forward appends without sampling, and a
      // model cannot spin in whitespace. (indent -1 is the package's "no indent".)
      return gc.compileJSONSchema(rewriteForGrammar(c.schema), false, -1, undefined, true);
    case 'regex':
      return gc.compileStructuralTag({
        type: 'structural_tag',
        format: { type: 'regex', pattern: c.pattern },
      });
    case 'choice':
      return gc.compileGrammar(choiceGrammar(c.choices));
    case 'grammar':
      return gc.compileGrammar(c.ebnf);
    case 'structural_tag':
      return gc.compileStructuralTag(c.tag);
  }
}

/** What xgrammar threw, without its build-machine path or the WebAssembly abort boilerplate. */
function cleanMessage(text: string): string {
  return text
    .replace(/\[(FATAL|WARNING)\]\s*\S+:\d+:\s*/g, '')
    .replace(/Aborted\(\)\..*$/s, '')
    .trim();
}

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  switch (req.op) {
    case 'compile': {
      const hit = cache.get(req.key);
      if (hit) {
        cache.delete(req.key);
        cache.set(req.key, hit);
        return { id: req.id, ok: true, ms: 0, cached: true };
      }
      // The engine's time limit runs from here, not from when the request joined the queue,
      // nor while the tokenizer info is built once (seconds on a loaded machine, not the
      // grammar's doing; a failure there fails the compile below).
      await getCompiler().catch(() => {});
      parentPort!.postMessage({ id: req.id, started: true });
      const t0 = performance.now();
      let compiled: CompiledGrammar;
      try {
        compiled = await compileConstraint(req.constraint);
      } catch (e) {
        // xgrammar prints its reason on the process's stderr (not through JS) and throws
        // either its message or a bare "Aborted()" (a failed check in its C++ code).
        const thrown = cleanMessage(e instanceof Error ? e.message : String(e));
        return { id: req.id, ok: false, error: thrown || 'the grammar library rejected it' };
      }
      cache.set(req.key, compiled);
      while (cache.size > init.cacheSize) {
        const [oldest, grammar] = cache.entries().next().value as [string, CompiledGrammar];
        cache.delete(oldest);
        grammar.dispose(); // matchers made from it hold their own reference
      }
      return { id: req.id, ok: true, ms: performance.now() - t0, cached: false };
    }
    case 'create': {
      const compiled = cache.get(req.key);
      if (!compiled) return { id: req.id, ok: false, error: 'grammar is no longer compiled' };
      const m = await xg.GrammarMatcher.createGrammarMatcher(compiled);
      const entry = { m, jump: req.jump };
      matchers.set(req.matcher, entry);
      return nextMask(req.id, entry, true);
    }
    case 'accept': {
      const entry = matchers.get(req.matcher);
      if (!entry) return { id: req.id, ok: false, error: 'no such matcher' };
      let accepted = true;
      for (const t of req.tokens) if (!(accepted = entry.m.acceptToken(t))) break;
      return nextMask(req.id, entry, accepted);
    }
    case 'free': {
      matchers.get(req.matcher)?.m.dispose();
      matchers.delete(req.matcher);
      return { id: req.id, ok: true };
    }
  }
}

async function nextMask(
  id: number,
  { m, jump }: { readonly m: GrammarMatcher; readonly jump: boolean },
  accepted: boolean,
): Promise<WorkerReply> {
  const terminated = m.isTerminated();
  const t0 = performance.now();
  const mask = terminated ? new Int32Array(0) : await m.getNextTokenBitmask();
  const maskMs = performance.now() - t0;
  const forced = jump && !terminated && accepted ? m.findJumpForwardString() : '';
  return { id, ok: true, accepted, terminated, mask, maskMs, jump: forced };
}

// One request at a time, in order: a matcher's accepts must apply in sampling order.
let chain = Promise.resolve();
parentPort!.on('message', (req: WorkerRequest) => {
  chain = chain.then(async () => {
    let reply: WorkerReply;
    try {
      reply = await handle(req);
    } catch (e) {
      reply = { id: req.id, ok: false, error: e instanceof Error ? e.message : String(e) };
    }
    const transfer = 'mask' in reply && reply.mask.byteLength > 0 ? [reply.mask.buffer as ArrayBuffer] : [];
    parentPort!.postMessage(reply, transfer);
  });
});
