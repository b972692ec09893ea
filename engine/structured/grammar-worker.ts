/**
 * The grammar thread: owns xgrammar (the grammar addon, native/grammar/) — the tokenizer
 * info, the compile cache and every sequence's matcher — so that compiling (milliseconds to
 * seconds) never runs on the event loop. The matchers live here too, next to their grammars:
 * the engine sends each sampled token, this thread advances the matcher and answers with the
 * next step's mask.
 *
 * Protocol (requests carry an `id`; every answer echoes it): see `WorkerRequest`.
 */
import { availableParallelism } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import {
  loadGrammarAddon,
  type CompiledGrammarHandle,
  type GrammarCompilerHandle,
  type GrammarMatcherHandle,
} from '../../native/native.js';
import { choiceGrammar, type GrammarConstraint } from './constraint.js';
import { prepareSchema } from './schema/prepare.js';

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
  /** Undo the matcher's last `count` tokens (speculative decoding's refused drafts). */
  | { readonly op: 'rollback'; readonly id: number; readonly matcher: number; readonly count: number }
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
      /** Not terminated, yet no token (not even a stop token) is allowed: a dead end. */
      readonly stuck: boolean;
    }
  | { readonly id: number; readonly ok: false; readonly error: string };

const xg = loadGrammarAddon();
const init = workerData as GrammarWorkerInit;
let compiler: GrammarCompilerHandle | null = null;
const cache = new Map<string, CompiledGrammarHandle>();
const matchers = new Map<number, { readonly m: GrammarMatcherHandle; readonly jump: boolean }>();
const maskWords = xg.bitmaskSize(init.vocabSize);
/** Threads one compile may use (xgrammar splits a grammar's token-mask precomputation). */
const COMPILE_THREADS = Math.max(1, Math.min(4, availableParallelism()));

function getCompiler(): GrammarCompilerHandle {
  if (compiler) return compiler;
  const info = xg.createTokenizerInfo(
    init.tokens,
    init.vocabType,
    init.prependSpace,
    init.vocabSize,
    init.stopTokenIds,
  );
  compiler = xg.createCompiler(info, COMPILE_THREADS);
  return compiler;
}

function compileConstraint(c: GrammarConstraint): CompiledGrammarHandle {
  const gc = getCompiler();
  switch (c.kind) {
    case 'json_object':
      // Any object: no strict mode, so any properties may appear.
      return xg.compileJsonSchema(gc, '{"type":"object"}', false);
    case 'json_schema': {
      // One line with `, ` and `: ` (JSON.stringify's layout with spaces): keys and
      // punctuation are then forced strings that jump-forward appends without sampling, and a
      // model cannot spin in whitespace.
      const prepared = prepareSchema(JSON.parse(c.schema) as unknown);
      if ('refused' in prepared) throw new Error(`${prepared.field}: ${prepared.refused}`);
      return xg.compileJsonSchema(gc, prepared.schema, true);
    }
    case 'regex':
      return xg.compileStructuralTag(
        gc,
        JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: c.pattern } }),
      );
    case 'choice':
      return xg.compileEbnf(gc, choiceGrammar(c.choices));
    case 'grammar':
      return xg.compileEbnf(gc, c.ebnf);
    case 'structural_tag':
      return xg.compileStructuralTag(gc, c.tag);
  }
}

function handle(req: WorkerRequest): WorkerReply {
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
      try {
        getCompiler();
      } catch {
        // reported by the compile below
      }
      parentPort!.postMessage({ id: req.id, started: true });
      const t0 = performance.now();
      let compiled: CompiledGrammarHandle;
      try {
        compiled = compileConstraint(req.constraint);
      } catch (e) {
        // The addon throws xgrammar's reason (a failed check in its C++ code included).
        const thrown = e instanceof Error ? e.message : String(e);
        return { id: req.id, ok: false, error: thrown || 'the grammar library rejected it' };
      }
      cache.set(req.key, compiled);
      while (cache.size > init.cacheSize) {
        const [oldest, grammar] = cache.entries().next().value as [string, CompiledGrammarHandle];
        cache.delete(oldest);
        xg.dispose(grammar); // matchers made from it hold their own reference
      }
      return { id: req.id, ok: true, ms: performance.now() - t0, cached: false };
    }
    case 'create': {
      const compiled = cache.get(req.key);
      if (!compiled) return { id: req.id, ok: false, error: 'grammar is no longer compiled' };
      const entry = { m: xg.createMatcher(compiled, false), jump: req.jump };
      matchers.set(req.matcher, entry);
      return nextMask(req.id, entry, true);
    }
    case 'accept': {
      const entry = matchers.get(req.matcher);
      if (!entry) return { id: req.id, ok: false, error: 'no such matcher' };
      let accepted = true;
      for (const t of req.tokens) if (!(accepted = xg.acceptToken(entry.m, t))) break;
      return nextMask(req.id, entry, accepted);
    }
    case 'rollback': {
      const entry = matchers.get(req.matcher);
      if (!entry) return { id: req.id, ok: false, error: 'no such matcher' };
      xg.rollback(entry.m, req.count);
      return nextMask(req.id, entry, true);
    }
    case 'free': {
      const entry = matchers.get(req.matcher);
      if (entry) xg.dispose(entry.m);
      matchers.delete(req.matcher);
      return { id: req.id, ok: true };
    }
  }
}

function nextMask(
  id: number,
  { m, jump }: { readonly m: GrammarMatcherHandle; readonly jump: boolean },
  accepted: boolean,
): WorkerReply {
  const terminated = xg.isTerminated(m);
  const t0 = performance.now();
  const mask = new Int32Array(terminated ? 0 : maskWords);
  if (!terminated) xg.fillNextTokenBitmask(m, mask);
  // A grammar whose language is empty (a schema no finite document matches, e.g. a required
  // property that is the schema itself) leaves nothing to sample: fail that sequence rather
  // than hand the sampler a mask that excludes the whole vocabulary.
  const stuck = !terminated && mask.every((w) => w === 0);
  const maskMs = performance.now() - t0;
  const forced = jump && !terminated && accepted && !stuck ? xg.findJumpForwardString(m) : '';
  return { id, ok: true, accepted, terminated, mask, maskMs, jump: forced, stuck };
}

// One request at a time, in order (the addon is synchronous): a matcher's accepts apply in
// sampling order.
parentPort!.on('message', (req: WorkerRequest) => {
  let reply: WorkerReply;
  try {
    reply = handle(req);
  } catch (e) {
    reply = { id: req.id, ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  const transfer = 'mask' in reply && reply.mask.byteLength > 0 ? [reply.mask.buffer as ArrayBuffer] : [];
  parentPort!.postMessage(reply, transfer);
});
