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
import { compileDocumentCheck, type DocumentCheck } from './schema/post-check.js';

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
  /**
   * Speculative decoding: how many of these draft tokens the grammar takes in a row, and the
   * mask (and forced string) after each one taken; the matcher is rolled back to where it was.
   */
  | {
      readonly op: 'draft';
      readonly id: number;
      readonly matcher: number;
      readonly tokens: readonly number[];
    }
  | { readonly op: 'free'; readonly id: number; readonly matcher: number }
  /** Validate a finished document of the grammar `key` (schemas compiled with a check). */
  | { readonly op: 'check'; readonly id: number; readonly key: string; readonly text: string }
  /** Validate a JSON text against a schema (a client's, as schema preparation's `check` gives it). */
  | { readonly op: 'checkJson'; readonly id: number; readonly schema: string; readonly text: string };

export type WorkerReply =
  /** A compile left the queue and started (not a final answer). */
  | { readonly id: number; readonly started: true }
  | {
      readonly id: number;
      readonly ok: true;
      readonly ms?: number;
      readonly cached?: boolean;
      /** The grammar accepts more than the schema: finished documents go through `check`. */
      readonly checked?: boolean;
    }
  /** A `check`'s verdict: null when the document is valid, else why not. */
  | { readonly id: number; readonly ok: true; readonly invalid: string | null }
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
  | {
      readonly id: number;
      readonly ok: true;
      /** Draft tokens taken (a token after which the document is complete is not). */
      readonly taken: number;
      /** `taken` masks, one after each token taken, back to back. */
      readonly masks: Int32Array;
      /** The forced string before the first token and after each one taken (jump-forward on). */
      readonly jumps: readonly string[];
    }
  | { readonly id: number; readonly ok: false; readonly error: string };

const xg = loadGrammarAddon();
const init = workerData as GrammarWorkerInit;
let compiler: GrammarCompilerHandle | null = null;
/** A compiled grammar, and the check of finished documents where the grammar is not exact. */
interface Compiled {
  readonly grammar: CompiledGrammarHandle;
  readonly check: DocumentCheck | null;
}
const cache = new Map<string, Compiled>();
/**
 * The check schema of each json_schema key compiled with one (the grammar alone is not
 * exact), by key, most recently compiled last: a `check` after the grammar's eviction compiles
 * the check again from it. Twice the engine's list of checked keys (StructuredOutput.checked,
 * 4096, oldest insertion evicted): a key the engine still lists is then always here, since at
 * most its 4096 and the 4096 inserted after the key were compiled after the key last was.
 */
const checkSchemas = new Map<string, string>();
const CHECK_SCHEMAS = 8192;

/** Notes a compile of `key` (a cache hit too) in `checkSchemas`. */
function keepCheckSchema(key: string, c: GrammarConstraint): void {
  if (c.kind !== 'json_schema' || c.check === null) return;
  checkSchemas.delete(key);
  checkSchemas.set(key, c.check);
  while (checkSchemas.size > CHECK_SCHEMAS) checkSchemas.delete(checkSchemas.keys().next().value as string);
}
/** Checks of tool-call arguments, by schema text (least recently used evicted). */
const jsonChecks = new Map<string, DocumentCheck>();
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

function compileConstraint(c: GrammarConstraint): Compiled {
  if (c.kind !== 'json_schema') return { grammar: compileGrammar(c), check: null };
  // The schema was prepared once, by the engine's check (validate.ts). One line with `, ` and
  // `: ` (JSON.stringify's layout with spaces): keys and punctuation are then forced strings
  // that jump-forward appends without sampling, and a model cannot spin in whitespace.
  const check = c.check === null ? null : compileCheck(c.check);
  return { grammar: xg.compileJsonSchema(getCompiler(), c.grammar, true), check };
}

function compileCheck(schemaText: string): DocumentCheck {
  try {
    return compileDocumentCheck(schemaText);
  } catch (e) {
    throw new Error(`the schema cannot be checked: ${(e as Error).message}`);
  }
}

function compileGrammar(c: Exclude<GrammarConstraint, { kind: 'json_schema' }>): CompiledGrammarHandle {
  const gc = getCompiler();
  switch (c.kind) {
    case 'json_object':
      // Any object: no strict mode, so any properties may appear.
      return xg.compileJsonSchema(gc, '{"type":"object"}', false);
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
        keepCheckSchema(req.key, req.constraint);
        return { id: req.id, ok: true, ms: 0, cached: true, checked: hit.check !== null };
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
      let compiled: Compiled;
      try {
        compiled = compileConstraint(req.constraint);
      } catch (e) {
        // The addon throws xgrammar's reason (a failed check in its C++ code included).
        const thrown = e instanceof Error ? e.message : String(e);
        return { id: req.id, ok: false, error: thrown || 'the grammar library rejected it' };
      }
      cache.set(req.key, compiled);
      keepCheckSchema(req.key, req.constraint);
      while (cache.size > init.cacheSize) {
        const [oldest, evicted] = cache.entries().next().value as [string, Compiled];
        cache.delete(oldest);
        xg.dispose(evicted.grammar); // matchers made from it hold their own reference
      }
      return {
        id: req.id,
        ok: true,
        ms: performance.now() - t0,
        cached: false,
        checked: compiled.check !== null,
      };
    }
    case 'create': {
      const compiled = cache.get(req.key);
      if (!compiled) return { id: req.id, ok: false, error: 'grammar is no longer compiled' };
      const entry = { m: xg.createMatcher(compiled.grammar, false), jump: req.jump };
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
    case 'draft': {
      const entry = matchers.get(req.matcher);
      if (!entry) return { id: req.id, ok: false, error: 'no such matcher' };
      return checkDraft(req.id, entry, req.tokens);
    }
    case 'check': {
      // Evicted since the request compiled it (many other schemas since): the check alone is
      // compiled again from the schema kept for it.
      const compiled = cache.get(req.key);
      if (compiled)
        return { id: req.id, ok: true, invalid: compiled.check ? compiled.check(req.text) : null };
      const kept = checkSchemas.get(req.key);
      // Never a document passed unchecked: without its schema the check fails the request.
      if (kept === undefined)
        return { id: req.id, ok: false, error: 'the check of this grammar is no longer kept' };
      return { id: req.id, ok: true, invalid: compileCheck(kept)(req.text) };
    }
    case 'checkJson': {
      let check = jsonChecks.get(req.schema);
      if (check) jsonChecks.delete(req.schema);
      else check = compileCheck(req.schema);
      jsonChecks.set(req.schema, check);
      while (jsonChecks.size > init.cacheSize) jsonChecks.delete(jsonChecks.keys().next().value as string);
      return { id: req.id, ok: true, invalid: check(req.text) };
    }
    case 'free': {
      const entry = matchers.get(req.matcher);
      if (entry) xg.dispose(entry.m);
      matchers.delete(req.matcher);
      return { id: req.id, ok: true };
    }
  }
}

/**
 * Walks the draft through the matcher: a token is taken when the grammar allows it and the
 * state after it still allows a token (a stop token that ends the document is left to the
 * model to sample). Rolls back what it took, so the engine's accept of the verified tokens
 * starts from the same state.
 */
function checkDraft(
  id: number,
  { m, jump }: { readonly m: GrammarMatcherHandle; readonly jump: boolean },
  tokens: readonly number[],
): WorkerReply {
  if (xg.isTerminated(m)) return { id, ok: true, taken: 0, masks: new Int32Array(0), jumps: [] };
  const masks = new Int32Array(tokens.length * maskWords);
  const jumps = [jump ? xg.findJumpForwardString(m) : ''];
  let taken = 0;
  for (const t of tokens) {
    if (!xg.acceptToken(m, t)) break;
    const row = masks.subarray(taken * maskWords, (taken + 1) * maskWords);
    if (xg.isTerminated(m)) {
      xg.rollback(m, 1);
      break;
    }
    xg.fillNextTokenBitmask(m, row);
    if (row.every((w) => w === 0)) {
      xg.rollback(m, 1); // a dead end: the model's own sample there will fail the request
      break;
    }
    taken++;
    jumps.push(jump ? xg.findJumpForwardString(m) : '');
  }
  if (taken > 0) xg.rollback(m, taken);
  return { id, ok: true, taken, masks: masks.slice(0, taken * maskWords), jumps };
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
  const bits = 'mask' in reply ? reply.mask : 'masks' in reply ? reply.masks : null;
  const transfer = bits && bits.byteLength > 0 ? [bits.buffer as ArrayBuffer] : [];
  parentPort!.postMessage(reply, transfer);
});
