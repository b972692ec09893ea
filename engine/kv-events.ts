/**
 * KV-cache events in vLLM's wire format, for routers that place a request on the engine that
 * already holds its prefix (llm-d's KV-cache indexer behind the Inference Extension's precise
 * prefix-cache scorer). The block manager reports every key it stores and drops
 * (BlockCacheObserver); this module batches the reports of one engine step and publishes them
 * on a ZeroMQ socket, as vLLM's ZmqEventPublisher does (vllm/distributed/kv_events.py):
 *
 *   frames:  [topic, sequence number (8 bytes, big-endian), msgpack(batch)]
 *   topic:   kv@<pod>@<model>  (llm-d takes the pod and the model from it)
 *   batch:   [ts (float seconds), [event, ...]]                        (msgspec array_like)
 *   events:  ["BlockStored", block_hashes, parent_block_hash | nil, token_ids, block_size,
 *             lora_id | nil, medium, lora_name | nil]
 *            ["BlockRemoved", block_hashes, medium]
 *            ["AllBlocksCleared"]
 *
 * Block hashes are unsigned 64-bit integers, as vLLM sends them by default
 * (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES): the last 8 bytes of the block's chained sha256 key,
 * read big-endian. lora_id is the adapter's load generation and lora_name its name (llm-d keys
 * an adapter's blocks by that name); medium is where the blocks live ('CPU' for this backend).
 *
 * A block hash means "a prompt starting with this block's prefix finds it cached here". For a
 * model with sliding-window layers (Gemma 3: global and sliding pages of one block, kept and
 * evicted apart) the block manager reports a block only while every layer group holds it, and
 * removes it when either group's pages go (engine/block-manager.ts): a router counting a
 * prompt's reported blocks from the first then never promises more than the engine hits. It
 * may promise less (a Gemma block whose sliding pages were evicted behind the window is gone
 * from the router's view though a longer prompt could still hit past it), which costs routing
 * quality, never correctness. (Recent vLLM tags each event with its KV-cache group instead,
 * for routers that filter by it; the wire format here has no group field.)
 *
 * Endpoint, as vLLM decides it: an address with `*` or `::`, or ipc:// / inproc://, is bound
 * (subscribers connect to this engine: llm-d's per-pod discovery); any other address is
 * connected to (a subscriber that binds: llm-d's central indexer). The socket is an XPUB, which
 * a SUB peer sees as a PUB; unlike a PUB it tells when the first subscriber arrives, and events
 * are held until then (a bounded queue), so a subscriber that connects after the engine
 * started still gets the first AllBlocksCleared and every block stored since. Later subscribers
 * get the events from their arrival on (vLLM's replay socket is not offered).
 */
import { encode } from '@msgpack/msgpack';
import { XPublisher } from 'zeromq';
import { adapterOfCacheExtra } from './adapters/manager.js';
import type { BlockCacheObserver } from './block-manager.js';
import type { KvEventsOptions } from './options.js';

/** Batches held while no subscriber has arrived (vLLM's buffer_steps); the oldest go first. */
const MAX_HELD_BATCHES = 10_000;

type Event =
  | {
      tag: 'BlockStored';
      hashes: bigint[];
      parent: bigint | null;
      tokens: number[];
      lastKey: string;
      extra: string;
    }
  | { tag: 'BlockRemoved'; hashes: bigint[] }
  | { tag: 'AllBlocksCleared' };

/** The 64-bit block hash published for a block key (the key's last 8 bytes, big-endian). */
export function externalBlockHash(key: string): bigint {
  const bytes = Buffer.from(key, 'base64url');
  return bytes.readBigUInt64BE(bytes.length - 8);
}

/** Does this endpoint bind (vLLM's rule) rather than connect? */
function bindsEndpoint(endpoint: string): boolean {
  return (
    endpoint.includes('*') ||
    endpoint.includes('::') ||
    endpoint.startsWith('ipc://') ||
    endpoint.startsWith('inproc://')
  );
}

export class KvEventPublisher implements BlockCacheObserver {
  /** Batches dropped because no subscriber arrived before MAX_HELD_BATCHES piled up. */
  dropped = 0;
  /** Batches sent, and the sequence number of the next one. */
  sent = 0n;
  private readonly socket = new XPublisher({ linger: 500, sendHighWaterMark: 100_000 });
  private readonly topic: Buffer;
  private pending: Event[] = [];
  private flushScheduled = false;
  private readonly held: Uint8Array[] = [];
  private subscribed = false;
  private sending = false;
  private closed = false;
  private idleWaiters: (() => void)[] = [];

  private constructor(
    readonly endpoint: string,
    topic: string,
    private readonly blockSize: number,
    private readonly medium: string,
  ) {
    this.topic = Buffer.from(topic, 'utf8');
  }

  /** Opens the socket (bind or connect) and queues the first AllBlocksCleared. */
  static async start(
    options: KvEventsOptions & { topic: string },
    blockSize: number,
    medium = 'CPU',
  ): Promise<KvEventPublisher> {
    const p = new KvEventPublisher(options.endpoint, options.topic, blockSize, medium);
    try {
      if (bindsEndpoint(options.endpoint)) await p.socket.bind(options.endpoint);
      else p.socket.connect(options.endpoint);
    } catch (e) {
      p.socket.close();
      throw new Error(`kvEvents.endpoint: cannot bind ${options.endpoint}: ${(e as Error).message}`);
    }
    void p.watchSubscriptions();
    // Whatever a subscriber still holds for this pod (an earlier run) is gone.
    p.pending.push({ tag: 'AllBlocksCleared' });
    p.scheduleFlush();
    return p;
  }

  /** The bound address (the port a `tcp://host:*` endpoint got), else the endpoint. */
  get address(): string {
    return this.socket.lastEndpoint ?? this.endpoint;
  }

  stored(key: string, parentKey: string, tokens: Int32Array, extra: string): void {
    if (this.closed) return;
    const last = this.pending[this.pending.length - 1];
    // Consecutive blocks of one chain go in one event, as vLLM stores a request's new blocks.
    if (last?.tag === 'BlockStored' && last.lastKey === parentKey && last.extra === extra) {
      last.hashes.push(externalBlockHash(key));
      for (const t of tokens) last.tokens.push(t);
      last.lastKey = key;
    } else {
      this.pending.push({
        tag: 'BlockStored',
        hashes: [externalBlockHash(key)],
        parent: parentKey === '' ? null : externalBlockHash(parentKey),
        tokens: Array.from(tokens),
        lastKey: key,
        extra,
      });
    }
    this.scheduleFlush();
  }

  removed(key: string): void {
    if (this.closed) return;
    const last = this.pending[this.pending.length - 1];
    if (last?.tag === 'BlockRemoved') last.hashes.push(externalBlockHash(key));
    else this.pending.push({ tag: 'BlockRemoved', hashes: [externalBlockHash(key)] });
    this.scheduleFlush();
  }

  /** Resolves once every event reported so far is on the socket (or dropped). */
  async idle(): Promise<void> {
    while (this.flushScheduled || this.sending || (this.subscribed && this.held.length > 0)) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  /** Publishes a last AllBlocksCleared (the engine's cache goes away with it) and closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.pending.push({ tag: 'AllBlocksCleared' });
    this.flush();
    this.closed = true;
    if (this.subscribed) await Promise.race([this.idle(), new Promise((r) => setTimeout(r, 1000))]);
    this.socket.close();
  }

  /** One batch per step: events reported in the same turn of the event loop go out together. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.pending.length > 0) {
      const events = this.pending.map((e) => this.wire(e));
      this.pending = [];
      this.held.push(encode([Date.now() / 1000, events], { useBigInt64: true }));
      if (this.held.length > MAX_HELD_BATCHES) {
        this.held.shift();
        this.dropped++;
      }
    }
    void this.drain();
  }

  private wire(e: Event): unknown[] {
    switch (e.tag) {
      case 'BlockStored': {
        const adapter = adapterOfCacheExtra(e.extra);
        return [
          e.tag,
          e.hashes,
          e.parent,
          e.tokens,
          this.blockSize,
          adapter?.generation ?? null,
          this.medium,
          adapter?.name ?? null,
        ];
      }
      case 'BlockRemoved':
        return [e.tag, e.hashes, this.medium];
      case 'AllBlocksCleared':
        return [e.tag];
    }
  }

  /** Sends held batches in order, one at a time (a zeromq socket takes one send at a time). */
  private async drain(): Promise<void> {
    if (this.sending || !this.subscribed) return this.wakeIdle();
    this.sending = true;
    try {
      while (this.held.length > 0 && !this.socket.closed) {
        const payload = this.held.shift()!;
        const seq = Buffer.alloc(8);
        seq.writeBigUInt64BE(this.sent++);
        await this.socket.send([this.topic, seq, payload]);
      }
    } catch {
      // The socket was closed under us (engine shutting down): nothing left to deliver to.
    } finally {
      this.sending = false;
      this.wakeIdle();
    }
  }

  private wakeIdle(): void {
    if (this.flushScheduled || this.sending || (this.subscribed && this.held.length > 0)) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** XPUB hands us subscription messages: the first subscribe (0x01 + topic prefix) opens the gate. */
  private async watchSubscriptions(): Promise<void> {
    try {
      for await (const [msg] of this.socket) {
        if (msg.length > 0 && msg[0] === 1 && !this.subscribed) {
          this.subscribed = true;
          void this.drain();
        }
      }
    } catch {
      // Closed.
    }
  }
}
