/**
 * xgrammar as the engine's `GrammarBackend` (grammar-backend.ts): the engine's side of the
 * grammar thread (grammar-worker.ts), which compiles constraints (an LRU cache keyed by
 * canonical text lives there) and owns every matcher. Here each sequence's matcher is a
 * `SequenceGrammar` holding the mask for its next step. A request waits for its compile
 * outside the scheduler, so a slow grammar never holds up the batch; a compile that fails or
 * takes longer than the limit fails that request with INVALID_ARGUMENT.
 */
import { Worker } from 'node:worker_threads';
import { EngineError, invalidArgument } from '../errors.js';
import type { GrammarVocab } from '../tokenizer/grammar-vocab.js';
import { canonicalText, type GrammarConstraint } from './constraint.js';
import type { CompiledGrammarRef, DraftCheck, GrammarBackend, GrammarMatcher } from './grammar-backend.js';
import type { GrammarWorkerInit, WorkerReply, WorkerRequest } from './grammar-worker.js';

export interface GrammarServiceOptions {
  readonly vocab: GrammarVocab;
  /** Rows of the logits (the mask has ceil(vocabSize/32) words). */
  readonly vocabSize: number;
  readonly stopTokenIds: readonly number[];
  readonly cacheSize?: number;
  readonly compileTimeoutMs?: number;
  /** Told each mask's computation time (ms) as the grammar thread measured it (a benchmark listens). */
  readonly onMaskTime?: (ms: number) => void;
}

/** What a matcher asks of its backend: the thread's answers to its calls. */
interface MatcherPort {
  accept(g: SequenceGrammar, tokens: readonly number[]): void;
  rollback(g: SequenceGrammar, n: number): void;
  draft(g: SequenceGrammar, tokens: readonly number[]): Promise<DraftCheck>;
}

/** One sequence's matcher on the grammar thread, as the engine sees it. */
export class SequenceGrammar implements GrammarMatcher {
  mask: Int32Array | null = null;
  terminated = false;
  error: string | null = null;
  jump = '';
  pending: Promise<void> = Promise.resolve();
  /**
   * Calls issued to the backend so far. Only the latest call's reply may set `mask`: a reply to
   * an earlier one (a create or accept followed at once by another accept, as a forked beam
   * is fed its history) describes a state the matcher has already left.
   */
  calls = 0;
  constructor(
    readonly id: number,
    readonly key: string,
    readonly jumpForward = false,
    /** The backend that answers (none for a matcher built by hand in a test). */
    private readonly port: MatcherPort | null = null,
  ) {}

  accept(tokens: readonly number[]): void {
    this.port?.accept(this, tokens);
  }

  rollback(n: number): void {
    this.port?.rollback(this, n);
  }

  fillMask(out: Int32Array, row: number): boolean {
    const m = this.mask;
    if (!m || m.length === 0) return false;
    out.set(m, row * m.length);
    return true;
  }

  checkDraft(tokens: readonly number[]): Promise<DraftCheck> {
    return this.port ? this.port.draft(this, tokens) : Promise.resolve({ taken: 0, masks: [], jumps: [] });
  }
}

type Reply = Exclude<WorkerReply, { ok: false } | { started: true }>;
/** A request without its id (Omit over a union keeps only the common keys, hence this). */
type Request = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

export class GrammarService implements GrammarBackend, MatcherPort {
  private readonly worker: Worker;
  private nextId = 1;
  private nextMatcher = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (r: Reply) => void; reject: (e: Error) => void; started?: () => void }
  >();
  private readonly timeoutMs: number;
  /** Set when the grammar thread died (a crash in the library): every later call fails. */
  dead: Error | null = null;
  private readonly vocabSize: number;
  private readonly onMaskTime: ((ms: number) => void) | undefined;

  constructor(options: GrammarServiceOptions) {
    this.timeoutMs = options.compileTimeoutMs ?? 10_000;
    this.vocabSize = options.vocabSize;
    this.onMaskTime = options.onMaskTime;
    const init: GrammarWorkerInit = {
      tokens: options.vocab.tokens,
      vocabType: options.vocab.vocabType,
      prependSpace: options.vocab.prependSpace,
      vocabSize: options.vocabSize,
      stopTokenIds: options.stopTokenIds,
      cacheSize: options.cacheSize ?? 64,
    };
    // Source tree (tsx): the .ts file, run through the loader the process was started with;
    // compiled tree: the .js next to this one.
    this.worker = import.meta.url.endsWith('.ts')
      ? new Worker(
          // Workers do not inherit tsx's loader: register it, then load the TypeScript source.
          `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register();` +
            ` return import(${JSON.stringify(new URL('./grammar-worker.ts', import.meta.url).href)}); });`,
          { eval: true, workerData: init },
        )
      : new Worker(new URL('./grammar-worker.js', import.meta.url), { workerData: init });
    this.worker.unref();
    this.worker.on('message', (reply: WorkerReply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      if ('started' in reply) {
        w.started?.();
        return;
      }
      this.waiting.delete(reply.id);
      if (reply.ok) w.resolve(reply);
      else w.reject(new Error(reply.error));
    });
    const failAll = (e: Error) => {
      this.dead ??= e;
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
    };
    this.worker.on('error', failAll);
    this.worker.on('exit', () => failAll(new Error('the grammar thread exited')));
  }

  private call(req: Request, started?: () => void): Promise<Reply> {
    const id = this.nextId++;
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<Reply>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, ...(started ? { started } : {}) });
      this.worker.postMessage({ ...req, id });
    });
  }

  /**
   * Compiles (or finds in the cache) the grammar of `c`; resolves to its cache key.
   * `field` names the request field in errors.
   */
  async compile(c: GrammarConstraint, field = 'constraint'): Promise<CompiledGrammarRef> {
    const key = canonicalText(c);
    let timer: NodeJS.Timeout | undefined;
    let expire: (e: Error) => void = () => {};
    const timeout = new Promise<never>((_, reject) => (expire = reject));
    // The limit counts compile time only: waiting behind another request's compile is not
    // this grammar's fault. (The worker finishes the compile anyway and caches it.)
    const started = () => {
      timer = setTimeout(
        () => expire(invalidArgument(field, `the grammar did not compile within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    };
    try {
      const r = await Promise.race([this.call({ op: 'compile', key, constraint: c }, started), timeout]);
      return {
        key,
        ms: 'ms' in r ? (r.ms ?? 0) : 0,
        cached: 'cached' in r ? (r.cached ?? false) : false,
        checked: 'checked' in r ? (r.checked ?? false) : false,
      };
    } catch (e) {
      if (e instanceof EngineError) throw e;
      throw invalidArgument(field, `the grammar does not compile: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async checkDocument(key: string, text: string): Promise<string | null> {
    const r = await this.call({ op: 'check', key, text });
    return 'invalid' in r ? r.invalid : null;
  }

  async checkJson(schema: string, text: string): Promise<string | null> {
    const r = await this.call({ op: 'checkJson', schema, text });
    return 'invalid' in r ? r.invalid : null;
  }

  /** A new matcher at the grammar's start; its first mask arrives in `pending`. */
  createMatcher(key: string, jumpForward = false): SequenceGrammar {
    const g = new SequenceGrammar(this.nextMatcher++, key, jumpForward, this);
    g.pending = this.track(g, ++g.calls, this.call({ op: 'create', key, matcher: g.id, jump: jumpForward }));
    return g;
  }

  /**
   * Advances the matcher by a sampled token (and the tokens jump-forward appended after it);
   * the next mask arrives in `pending`.
   */
  accept(g: SequenceGrammar, tokens: readonly number[]): void {
    this.after(g, { op: 'accept', matcher: g.id, tokens });
  }

  /** Undoes the matcher's last `n` tokens; the mask of that earlier state arrives in `pending`. */
  rollback(g: SequenceGrammar, n: number): void {
    this.after(g, { op: 'rollback', matcher: g.id, count: n });
  }

  /** Checks draft tokens against the matcher, queued behind its earlier calls; its state stays. */
  draft(g: SequenceGrammar, tokens: readonly number[]): Promise<DraftCheck> {
    const words = Math.ceil(this.vocabSize / 32);
    const result = g.pending
      .then(() => this.call({ op: 'draft', matcher: g.id, tokens }))
      .then((r): DraftCheck => {
        if (!('taken' in r)) throw new Error('the grammar thread answered a draft check with something else');
        const masks = Array.from({ length: r.taken }, (_, i) => r.masks.subarray(i * words, (i + 1) * words));
        return { taken: r.taken, masks, jumps: r.jumps };
      });
    g.pending = result.then(
      () => {},
      () => {},
    );
    return result;
  }

  /** Queues `req` behind the matcher's earlier calls (the thread answers them in order). */
  private after(g: SequenceGrammar, req: Request): void {
    g.mask = null;
    g.jump = '';
    const n = ++g.calls;
    g.pending = g.pending.then(() => this.track(g, n, this.call(req)));
  }

  private track(g: SequenceGrammar, n: number, reply: Promise<Reply>): Promise<void> {
    return reply.then(
      (r) => {
        if (!('mask' in r)) return;
        if (!r.accepted && g.error === null) g.error = 'the grammar refused a sampled token';
        if (r.stuck && g.error === null)
          g.error = 'the grammar allows no token here: no finite document matches the constraint';
        if (n !== g.calls) return; // a later call is in flight: its reply brings the mask
        g.terminated = r.terminated;
        g.mask = r.stuck ? null : r.mask;
        g.jump = r.jump;
        this.onMaskTime?.(r.maskMs);
      },
      (e: unknown) => {
        g.error ??= `grammar failed: ${(e as Error).message}`;
      },
    );
  }

  free(g: GrammarMatcher): void {
    if (!(g instanceof SequenceGrammar)) return;
    void g.pending.then(() => this.call({ op: 'free', matcher: g.id })).catch(() => {});
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
