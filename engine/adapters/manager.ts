/**
 * The served adapters: which are loaded, in which native slot, and who uses them. Owns the
 * spec's load/unload rules and their message texts (MindIE's and vLLM's, see
 * shared/reference/mindie-compat.md §1.6 and §6):
 *  - a load checks the name, the path (rules.ts), the files (peft-reader.ts), rank ≤
 *    maxLoraRank and at most maxLoras resident, then binds a free slot between steps;
 *  - every load gets a new generation; the prefix-cache key of its requests carries
 *    (name, generation), so adapters never share KV and a reload never hits stale blocks;
 *  - an unload makes the name unknown at once (new requests: NOT_FOUND), while requests
 *    already admitted finish on the adapter; its slot is freed when the last one ends.
 * Native slot binding is given as a callback so this module runs without a model in tests.
 */
import { EngineError } from '../errors.js';
import { AdapterFormatError } from './peft-config.js';
import type { PeftAdapter } from './peft-reader.js';
import { checkAdapterName, checkAdapterPath } from './rules.js';

export interface AdapterLimits {
  /** Slots: adapters resident at once. 0 = no adapters at all. */
  readonly maxLoras: number;
  /** Largest rank a dynamic load may have (static adapters define their own). */
  readonly maxLoraRank: number;
  /** Dynamic load/unload allowed (maxLoras and maxLoraRank were both set). */
  readonly dynamic: boolean;
}

/** What the native side does for the manager (load-engine.ts wires the addon in). */
export interface AdapterBackend {
  /** Reads the (path-checked) directory against the base model. Throws AdapterFormatError. */
  read(dir: string): PeftAdapter;
  /** Copies the matrices into native storage and binds them to `slot` (only between steps). */
  bind(slot: number, adapter: PeftAdapter): void;
  unbind(slot: number): void;
}

export interface AdapterEntry {
  readonly name: string;
  readonly path: string;
  readonly rank: number;
  readonly slot: number;
  readonly generation: number;
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
  private nextGeneration = 1;

  constructor(
    readonly limits: AdapterLimits,
    private readonly backend: AdapterBackend,
    /** True while a native step runs (slots may then not change). */
    private readonly stepping: () => boolean = () => false,
  ) {}

  /** Loaded adapters (not those being unloaded), in load order. */
  list(): AdapterEntry[] {
    return [...this.entries.values()];
  }

  /** Requests running or waiting per adapter name (the vLLM lora_requests_info gauge). */
  get resident(): number {
    return this.entries.size + this.unloading.length;
  }

  /**
   * Loads an adapter. `isStatic` (LoraModules) skips the dynamic-loading switch and the
   * maxLoraRank bound when none was configured. Resolves with the success message.
   */
  load(name: unknown, path: unknown, isStatic = false): string {
    const bad = (status: 'INVALID_ARGUMENT' | 'NOT_FOUND', message: string) =>
      new AdapterOpError(status, message, status === 'NOT_FOUND' ? 'lora_path' : 'lora_name');
    if (!isStatic && !this.limits.dynamic) {
      throw new AdapterOpError(
        'UNAVAILABLE',
        'dynamic LoRA loading is off: set ModelDeployConfig.maxLoras and maxLoraRank > 0',
      );
    }
    const nameProblem = checkAdapterName(name);
    if (nameProblem) throw new AdapterOpError('INVALID_ARGUMENT', `lora_name: ${nameProblem}`, 'lora_name');
    const n = name as string;
    if (this.entries.has(n)) throw bad('INVALID_ARGUMENT', `The LoRA adapter '${n}' has already been added.`);
    if (this.unloading.some((e) => e.name === n))
      throw bad('INVALID_ARGUMENT', `The LoRA adapter '${n}' is waiting to unload.`);
    const pathProblem = checkAdapterPath(path);
    if (pathProblem) {
      if (pathProblem.startsWith('No adapter found')) {
        throw bad('NOT_FOUND', `Loading LoRA '${n}' failed: ${pathProblem}`);
      }
      throw new AdapterOpError('INVALID_ARGUMENT', `lora_path: ${pathProblem}`, 'lora_path');
    }
    if (this.resident >= this.limits.maxLoras) {
      throw bad(
        'INVALID_ARGUMENT',
        `The number of LoRA adapters exceeds 'max_loras' (${this.limits.maxLoras}), and none are currently unloading.`,
      );
    }
    const started = performance.now();
    let adapter: PeftAdapter;
    try {
      adapter = this.backend.read(path as string);
    } catch (e) {
      // Any failure to read the files (format, permissions, I/O) is this load's failure only.
      const why = e instanceof Error ? e.message : String(e);
      throw bad(
        e instanceof AdapterFormatError && why.startsWith('No adapter found')
          ? 'NOT_FOUND'
          : 'INVALID_ARGUMENT',
        `Call to load LoRA method failed: The LoRA adapter '${n}' is invalid. ${why}`,
      );
    }
    if (this.limits.maxLoraRank > 0 && adapter.rank > this.limits.maxLoraRank) {
      throw bad(
        'INVALID_ARGUMENT',
        `LoRA rank ${adapter.rank} is greater than max_lora_rank ${this.limits.maxLoraRank}.`,
      );
    }
    const slot = this.freeSlot();
    try {
      this.backend.bind(slot, adapter);
    } catch (e) {
      throw bad(
        'INVALID_ARGUMENT',
        `Call to load LoRA method failed: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    this.entries.set(n, {
      name: n,
      path: path as string,
      rank: adapter.rank,
      slot,
      generation: this.nextGeneration++,
      users: 0,
      state: 'loaded',
      loadedAt: Date.now(),
      loadMs: performance.now() - started,
    });
    return `Success: LoRA adapter '${n}' added successfully.`;
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
   * The adapter a request names ('' or absent: the base model, slot -1). Throws NOT_FOUND
   * for an unknown or unloading adapter.
   */
  resolve(name: string | undefined): { entry: AdapterEntry | null; slot: number; cacheExtra: string } {
    if (!name) return { entry: null, slot: -1, cacheExtra: '' };
    const e = this.entries.get(name);
    if (!e) throw new EngineError('NOT_FOUND', `Model ${name} not found.`, 'adapter');
    return { entry: e, slot: e.slot, cacheExtra: `lora\0${e.name}\0${e.generation}` };
  }

  acquire(e: AdapterEntry | null): void {
    if (e) e.users++;
  }

  release(e: AdapterEntry | null): void {
    if (!e) return;
    e.users--;
    this.betweenSteps();
  }

  /** Frees the slots of unloaded adapters nobody uses; the engine calls it between steps. */
  betweenSteps(): void {
    if (this.stepping()) return;
    for (let i = this.unloading.length - 1; i >= 0; i--) {
      const e = this.unloading[i]!;
      if (e.users > 0) continue;
      this.backend.unbind(e.slot);
      this.unloading.splice(i, 1);
    }
  }

  private freeSlot(): number {
    const used = new Set([...this.entries.values(), ...this.unloading].map((e) => e.slot));
    for (let s = 0; s < this.limits.maxLoras; s++) if (!used.has(s)) return s;
    throw new AdapterOpError(
      'INVALID_ARGUMENT',
      `The number of LoRA adapters exceeds 'max_loras' (${this.limits.maxLoras}).`,
    );
  }
}
