/**
 * The prefill side's lease table: the KV blocks of requests whose prompt this engine computed
 * for another engine to decode. A lease holds a reference on each block (so neither the step
 * loop nor the prefix cache's eviction takes them) until the one transfer it allows has ended,
 * the request is cancelled, or it expires (vLLM's NIXL connector frees unpulled blocks after a
 * timeout the same way). A lease being transferred leaves the table: nothing can cancel or
 * expire it under its reader, and its blocks are released when the transfer ends.
 */
export interface LeaseData {
  /** The prefill request's id (vLLM's remote_request_id). */
  readonly id: string;
  /** KV blocks in sequence order; the last may be partly filled. */
  readonly blocks: readonly number[];
  /** The tokens whose KV the blocks hold (the prompt). */
  readonly tokens: readonly number[];
  /** The first token sampled after the prompt, its logprob, and the resolved seed. */
  readonly firstToken: number;
  readonly firstLogprob: number;
  readonly seed: number;
}

/** A lease being transferred: what `begin` hands out and `end` takes back. */
export interface LeaseHandle extends LeaseData {
  readonly __lease: true;
}

interface Lease extends LeaseData {
  readonly __lease: true;
  timer: ReturnType<typeof setTimeout>;
  transferring: boolean;
}

export class LeaseTable {
  private readonly leases = new Map<string, Lease>();
  private held = 0;

  constructor(
    /** Drops the lease's reference on each block (the block manager's unhold). */
    private readonly releaseBlocks: (blocks: readonly number[]) => void,
    readonly ttlMs: number,
  ) {}

  /** Blocks held under leases (a block shared by two leases counts twice). */
  get heldBlocks(): number {
    return this.held;
  }

  get size(): number {
    return this.leases.size;
  }

  /** Takes over the references the caller already holds on `data.blocks`. */
  add(data: LeaseData): void {
    this.cancel(data.id); // a new request reusing an id: the old lease goes
    const lease: Lease = {
      ...data,
      __lease: true,
      blocks: [...data.blocks],
      transferring: false,
      timer: setTimeout(() => this.cancel(data.id), this.ttlMs),
    };
    lease.timer.unref?.();
    this.leases.set(data.id, lease);
    this.held += lease.blocks.length;
  }

  has(id: string): boolean {
    return this.leases.has(id);
  }

  /** Starts the lease's one transfer; undefined when there is no such lease or it is taken. */
  begin(id: string): LeaseHandle | undefined {
    const l = this.leases.get(id);
    if (!l) return undefined;
    l.transferring = true;
    clearTimeout(l.timer);
    // Out of the table at once: a later lease may take the id while this one is read.
    this.leases.delete(id);
    return l;
  }

  /** The transfer ended (done or failed): the lease is used up and its blocks freed. */
  end(handle: LeaseHandle): void {
    const l = handle as Lease;
    if (!l.transferring) return;
    l.transferring = false;
    this.held -= l.blocks.length;
    this.releaseBlocks(l.blocks);
  }

  /** Frees a lease that no transfer has begun (a running transfer frees its own at its end). */
  cancel(id: string): void {
    const l = this.leases.get(id);
    if (l) this.drop(l);
  }

  /** Frees every lease no transfer has begun (engine close); running ones free theirs as they end. */
  close(): void {
    for (const id of [...this.leases.keys()]) this.cancel(id);
  }

  private drop(l: Lease): void {
    clearTimeout(l.timer);
    this.leases.delete(l.id);
    this.held -= l.blocks.length;
    this.releaseBlocks(l.blocks);
  }
}
