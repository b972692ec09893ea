/**
 * The served adapters: which are loaded, which native slot each holds, and who uses them.
 * Owns the spec's load/unload rules and their message texts (MindIE's and vLLM's, see
 * shared/reference/mindie-compat.md §1.6 and §6):
 *  - a load checks the name, the path (rules.ts), the files (peft-reader.ts, read on a
 *    worker thread), rank ≤ maxLoraRank and at most maxCpuLoras loaded, then copies the
 *    matrices into native storage (on a libuv thread): the event loop never waits on it;
 *  - a name being loaded is reserved: a second load of it is refused at once, and a load
 *    that fails at any stage leaves nothing behind (no entry, no native adapter, no slot);
 *  - every load gets a new generation; the prefix-cache key of its requests carries
 *    (name, generation), so adapters never share KV and a reload never hits stale blocks;
 *  - an unload makes the name unknown at once (new requests: NOT_FOUND), while requests
 *    already admitted finish on the adapter; its slot is freed when the last one ends.
 *
 * Slots vs loaded adapters (vLLM's max_loras vs max_cpu_loras; the spec has only maxLoras,
 * which stays both when maxCpuLoras is not set): a loaded adapter holds its native matrices
 * but a native slot only while the scheduler needs it. `slotFor` gives a sequence's adapter
 * a slot when the sequence is admitted to a step: its own if resident, a free one, or else
 * the least recently used slot of an adapter that no running sequence uses (never one in
 * use). Binding a slot only points it at the adapter's matrices: nothing is copied.
 * Native calls are given as a backend so this module runs without a model in tests.
 */
import { EngineError } from '../errors.js';
import { AdapterFormatError } from './peft-config.js';
import type { PeftAdapter } from './peft-reader.js';
import { checkAdapterName, checkAdapterPath } from './rules.js';

export interface AdapterLimits {
  /** Native slots: distinct adapters one step may use (vLLM max_loras). 0 = no adapters. */
  readonly maxLoras: number;
  /** Adapters loaded at once (vLLM max_cpu_loras); ≥ maxLoras; absent = maxLoras. */
  readonly maxCpuLoras?: number;
  /** Largest rank a dynamic load may have (static adapters define their own). */
  readonly maxLoraRank: number;
  /** Dynamic load/unload allowed (maxLoras and maxLoraRank were both set). */
  readonly dynamic: boolean;
}

/** What the native side does for the manager (load-adapters.ts wires the addon in). */
export interface AdapterBackend {
  /** Reads the (path-checked) directory against the base model. Rejects with AdapterFormatError. */
  read(dir: string): Promise<PeftAdapter>;
  /** Copies the matrices into native storage; the result is what bind() takes. */
  create(adapter: PeftAdapter): Promise<unknown>;
  /** Frees what create() made (a slot bound to it keeps its own reference). */
  dispose(handle: unknown): void;
  /** Points `slot` at the adapter (only for slots no running step uses). */
  bind(slot: number, handle: unknown): void;
  unbind(slot: number): void;
}

export interface AdapterEntry {
  readonly name: string;
  readonly path: string;
  readonly rank: number;
  readonly generation: number;
  /** Native slot while resident, -1 when another adapter took it (or none was needed yet). */
  slot: number;
  /** Admitted requests using it. */
  users: number;
  state: 'loaded' | 'unloading';
  readonly loadedAt: number;
  readonly loadMs: number;
}

/** Outcome of a load/unload: MindIE/vLLM message text plus the status class. */
export class AdapterOpError extends EngineError {}

export class AdapterManager {
  private readonly entries = new Map<string, AdapterEntry>();
  private readonly unloading: AdapterEntry[] = [];
  /** Every entry still holding native matrices (loaded or unloading), by generation. */
  private readonly byGeneration = new Map<number, { entry: AdapterEntry; handle: unknown }>();
  /** Names whose load is under way (reserved: counted against the limit, refused twice). */
  private readonly pending = new Set<string>();
  /** slot → generation bound there (0 = free), and when each slot was last handed out. */
  private readonly slots: number[];
  private readonly lastUsed: number[];
  private tick = 0;
  private nextGeneration = 1;
  /** Slot changes so far (tests and the bench read it). */
  swaps = 0;

  constructor(
    readonly limits: AdapterLimits,
    private readonly backend: AdapterBackend,
    /** True while a native step runs (slots may then not be freed). */
    private readonly stepping: () => boolean = () => false,
  ) {
    this.slots = new Array<number>(limits.maxLoras).fill(0);
    this.lastUsed = new Array<number>(limits.maxLoras).fill(0);
  }

  /** Adapters loaded at once. */
  get maxLoaded(): number {
    return Math.max(this.limits.maxCpuLoras ?? 0, this.limits.maxLoras);
  }

  /** Loaded adapters (not those being unloaded), in load order. */
  list(): AdapterEntry[] {
    return [...this.entries.values()];
  }

  /** Adapters holding native matrices: loaded plus those waiting to unload. */
  get resident(): number {
    return this.entries.size + this.unloading.length;
  }

  /**
   * Loads an adapter. `isStatic` (LoraModules) skips the dynamic-loading switch and the
   * maxLoraRank bound when none was configured. Resolves with the success message; rejects
   * with AdapterOpError, having undone whatever it had done.
   */
  async load(name: unknown, path: unknown, isStatic = false): Promise<string> {
    const n = this.checkLoad(name, path, isStatic);
    this.pending.add(n);
    const started = performance.now();
    let handle: unknown;
    let created = false;
    try {
      const adapter = await this.read(n, path as string);
      if (this.limits.maxLoraRank > 0 && adapter.rank > this.limits.maxLoraRank) {
        throw this.bad(
          'INVALID_ARGUMENT',
          `LoRA rank ${adapter.rank} is greater than max_lora_rank ${this.limits.maxLoraRank}.`,
        );
      }
      try {
        handle = await this.backend.create(adapter);
        created = true;
      } catch (e) {
        throw this.bad(
          'INVALID_ARGUMENT',
          `Call to load LoRA method failed: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
      const entry: AdapterEntry = {
        name: n,
        path: path as string,
        rank: adapter.rank,
        generation: this.nextGeneration++,
        slot: -1,
        users: 0,
        state: 'loaded',
        loadedAt: Date.now(),
        loadMs: performance.now() - started,
      };
      this.byGeneration.set(entry.generation, { entry, handle });
      this.entries.set(n, entry);
      created = false; // owned by the entry from here on
      return `Success: LoRA adapter '${n}' added successfully.`;
    } finally {
      this.pending.delete(n);
      if (created) this.backend.dispose(handle);
    }
  }

  /** The synchronous rules of a load; returns the name. */
  private checkLoad(name: unknown, path: unknown, isStatic: boolean): string {
    if (!isStatic && !this.limits.dynamic) {
      throw new AdapterOpError(
        'UNAVAILABLE',
        'dynamic LoRA loading is off: set ModelDeployConfig.maxLoras and maxLoraRank > 0',
      );
    }
    const nameProblem = checkAdapterName(name);
    if (nameProblem) throw new AdapterOpError('INVALID_ARGUMENT', `lora_name: ${nameProblem}`, 'lora_name');
    const n = name as string;
    if (this.entries.has(n))
      throw this.bad('INVALID_ARGUMENT', `The LoRA adapter '${n}' has already been added.`);
    if (this.pending.has(n)) throw this.bad('INVALID_ARGUMENT', `The LoRA adapter '${n}' is being loaded.`);
    if (this.unloading.some((e) => e.name === n))
      throw this.bad('INVALID_ARGUMENT', `The LoRA adapter '${n}' is waiting to unload.`);
    const pathProblem = checkAdapterPath(path);
    if (pathProblem) {
      if (pathProblem.startsWith('No adapter found')) {
        throw this.bad('NOT_FOUND', `Loading LoRA '${n}' failed: ${pathProblem}`);
      }
      throw new AdapterOpError('INVALID_ARGUMENT', `lora_path: ${pathProblem}`, 'lora_path');
    }
    if (this.resident + this.pending.size >= this.maxLoaded) {
      // MindIE's text names max_loras; with a separate loaded limit, it names that one.
      const limit = this.maxLoaded === this.limits.maxLoras ? 'max_loras' : 'max_cpu_loras';
      throw this.bad(
        'INVALID_ARGUMENT',
        `The number of LoRA adapters exceeds '${limit}' (${this.maxLoaded})` +
          (this.unloading.length > 0
            ? '; some are unloading, retry once they end.'
            : ', and none are currently unloading.'),
      );
    }
    return n;
  }

  private async read(n: string, path: string): Promise<PeftAdapter> {
    try {
      return await this.backend.read(path);
    } catch (e) {
      // Any failure to read the files (format, permissions, I/O) is this load's failure only.
      const why = e instanceof Error ? e.message : String(e);
      throw this.bad(
        e instanceof AdapterFormatError && why.startsWith('No adapter found')
          ? 'NOT_FOUND'
          : 'INVALID_ARGUMENT',
        `Call to load LoRA method failed: The LoRA adapter '${n}' is invalid. ${why}`,
      );
    }
  }

  private bad(status: 'INVALID_ARGUMENT' | 'NOT_FOUND', message: string): AdapterOpError {
    return new AdapterOpError(status, message, status === 'NOT_FOUND' ? 'lora_path' : 'lora_name');
  }

  /** Unloads: unknown at once for new requests; the slot is freed once running ones end. */
  unload(name: unknown): string {
    const n = typeof name === 'string' ? name : '';
    const e = this.entries.get(n);
    if (!e) throw new AdapterOpError('NOT_FOUND', `The LoRA adapter '${n}' cannot be found.`, 'lora_name');
    this.entries.delete(n);
    e.state = 'unloading';
    this.unloading.push(e);
    this.betweenSteps();
    return `Success: LoRA adapter '${n}' removed successfully.`;
  }

  /**
   * The adapter a request names ('' or absent: the base model). Throws NOT_FOUND for an
   * unknown or unloading adapter.
   */
  resolve(name: string | undefined): { entry: AdapterEntry | null; cacheExtra: string } {
    if (!name) return { entry: null, cacheExtra: '' };
    const e = this.entries.get(name);
    if (!e) throw new EngineError('NOT_FOUND', `Model ${name} not found.`, 'adapter');
    return { entry: e, cacheExtra: adapterCacheExtra(e.name, e.generation) };
  }

  acquire(e: AdapterEntry | null): void {
    if (e) e.users++;
  }

  release(e: AdapterEntry | null): void {
    if (!e) return;
    e.users--;
    this.betweenSteps();
  }

  /**
   * A slot for the adapter of `generation`, for the step being planned (called by the
   * scheduler between steps): its own, else a free one, else the least recently used slot
   * not in `pinned` (slots of running sequences and of this step). -1: none free now, the
   * sequence waits for one.
   */
  slotFor(generation: number, pinned: ReadonlySet<number>): number {
    const held = this.byGeneration.get(generation);
    if (!held) return -1;
    const { entry, handle } = held;
    if (entry.slot < 0) {
      let pick = this.slots.indexOf(0);
      if (pick < 0) {
        for (let s = 0; s < this.slots.length; s++) {
          if (pinned.has(s)) continue;
          if (pick < 0 || this.lastUsed[s]! < this.lastUsed[pick]!) pick = s;
        }
      }
      if (pick < 0) return -1;
      const evicted = this.byGeneration.get(this.slots[pick]!);
      if (evicted) evicted.entry.slot = -1;
      this.backend.bind(pick, handle);
      this.slots[pick] = generation;
      entry.slot = pick;
      this.swaps++;
    }
    this.lastUsed[entry.slot] = ++this.tick;
    return entry.slot;
  }

  /** Frees the matrices and slots of unloaded adapters nobody uses; called between steps. */
  betweenSteps(): void {
    if (this.stepping()) return;
    for (let i = this.unloading.length - 1; i >= 0; i--) {
      const e = this.unloading[i]!;
      if (e.users > 0) continue;
      if (e.slot >= 0) {
        this.backend.unbind(e.slot);
        this.slots[e.slot] = 0;
        this.lastUsed[e.slot] = 0;
        e.slot = -1;
      }
      const held = this.byGeneration.get(e.generation);
      this.byGeneration.delete(e.generation);
      if (held) this.backend.dispose(held.handle);
      this.unloading.splice(i, 1);
    }
  }
}

/** The prefix-cache isolation key of an adapter's requests: its name and load generation. */
function adapterCacheExtra(name: string, generation: number): string {
  return `lora\0${name}\0${generation}`;
}

/** The adapter a block's cache key names (inverse of adapterCacheExtra); null for the base model. */
export function adapterOfCacheExtra(extra: string): { name: string; generation: number } | null {
  const parts = extra.split('\0');
  if (parts.length !== 3 || parts[0] !== 'lora') return null;
  return { name: parts[1], generation: Number(parts[2]) };
}
