/**
 * A KV-event subscriber for tests, decoding vLLM's wire format the way llm-d's indexer does
 * (pkg/kvevents/zmq_subscriber.go and engineadapter/vllm_adapter.go in llm-d-kv-cache): three
 * frames (topic, 8-byte big-endian sequence number, msgpack payload), the payload a positional
 * array [ts, events], each event a positional array whose first element is its tag. Every
 * field's type and position is checked strictly, and the events are applied to a mirror of
 * the publisher's cached blocks: what a router would believe the engine holds.
 */
import assert from 'node:assert/strict';
import { decode } from '@msgpack/msgpack';
import { Subscriber } from 'zeromq';

export interface MirroredBlock {
  readonly parent: bigint | null;
  readonly tokens: readonly number[];
  readonly blockSize: number;
  readonly loraId: number | null;
  readonly loraName: string | null;
  readonly medium: string;
}

export interface EventCounts {
  stored: number;
  removed: number;
  cleared: number;
  batches: number;
}

const isU64 = (v: unknown): v is bigint => typeof v === 'bigint' && v >= 0n && v < 1n << 64n;
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
/** msgpack integers under 2^53 decode as numbers; hashes are compared as bigints. */
const u64 = (v: unknown): bigint => {
  const b = typeof v === 'number' && Number.isInteger(v) && v >= 0 ? BigInt(v) : v;
  assert.ok(isU64(b), `a block hash is an unsigned 64-bit integer, got ${String(v)}`);
  return b;
};

export class KvEventMirror {
  readonly blocks = new Map<bigint, MirroredBlock>();
  readonly counts: EventCounts = { stored: 0, removed: 0, cleared: 0, batches: 0 };
  /** Every BlockStored seen, with its adapter: the history, whatever was evicted since. */
  readonly storedLora: { loraId: number | null; loraName: string | null }[] = [];
  readonly topics = new Set<string>();
  /** Every payload as received (for a second decoder). */
  readonly payloads: Buffer[] = [];
  private nextSeq = 0n;
  private readonly sub = new Subscriber();
  private readonly done: Promise<void>;
  private waiters: (() => void)[] = [];

  constructor(endpoint: string, opts: { bind?: boolean; topicPrefix?: string } = {}) {
    this.sub.subscribe(opts.topicPrefix ?? 'kv@');
    if (!opts.bind) this.sub.connect(endpoint);
    this.done = (opts.bind ? this.sub.bind(endpoint) : Promise.resolve()).then(() => this.read());
  }

  /** The address a bound `tcp://host:*` got. */
  get address(): string | null {
    return this.sub.lastEndpoint;
  }

  /** Batches received (sequence numbers 0..n-1, no gaps). */
  get received(): bigint {
    return this.nextSeq;
  }

  /** Resolves once `n` batches have arrived (or rejects after `ms`). */
  async waitFor(n: bigint, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.nextSeq < n) {
      if (Date.now() > deadline) throw new Error(`got ${this.nextSeq} KV-event batches, expected ${n}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  close(): Promise<void> {
    this.sub.close();
    return this.done.catch(() => {});
  }

  private async read(): Promise<void> {
    try {
      for await (const frames of this.sub) this.apply(frames);
    } catch (e) {
      if (!this.sub.closed) throw e;
    }
  }

  private apply(frames: Buffer[]): void {
    assert.equal(frames.length, 3, 'a message is [topic, sequence, payload]');
    const [topic, seqBytes, payload] = frames;
    this.topics.add(topic.toString('utf8'));
    assert.equal(seqBytes.length, 8, 'the sequence number is 8 bytes');
    assert.equal(seqBytes.readBigUInt64BE(0), this.nextSeq, 'sequence numbers count up from 0 without gaps');
    this.nextSeq++;
    this.payloads.push(payload);
    const batch = decode(payload, { useBigInt64: true }) as unknown;
    assert.ok(Array.isArray(batch) && batch.length === 2, 'a batch is [ts, events] (array_like)');
    const [ts, events] = batch as [unknown, unknown];
    assert.equal(typeof ts, 'number');
    assert.ok(Math.abs((ts as number) - Date.now() / 1000) < 60, 'ts is seconds since the epoch');
    assert.ok(Array.isArray(events) && events.length > 0, 'a batch carries events');
    this.counts.batches++;
    for (const ev of events as unknown[]) this.applyEvent(ev);
    for (const w of this.waiters.splice(0)) w();
  }

  private applyEvent(ev: unknown): void {
    assert.ok(Array.isArray(ev) && typeof ev[0] === 'string', 'an event is [tag, ...fields]');
    const e = ev as unknown[];
    switch (e[0]) {
      case 'BlockStored': {
        assert.equal(e.length, 8, 'BlockStored: tag + 7 fields (vLLM without extra_keys)');
        const [, hashes, parent, tokens, blockSize, loraId, medium, loraName] = e;
        assert.ok(Array.isArray(hashes) && hashes.length > 0);
        assert.ok(parent === null || isU64(u64(parent)));
        assert.ok(Array.isArray(tokens) && tokens.every(isInt));
        assert.ok(isInt(blockSize) && blockSize > 0);
        assert.equal(tokens.length, hashes.length * blockSize, 'token_ids hold every stored block whole');
        assert.ok(loraId === null || isInt(loraId));
        assert.ok(loraName === null || typeof loraName === 'string');
        assert.equal(loraId === null, loraName === null, 'lora_id and lora_name come together');
        assert.equal(typeof medium, 'string');
        let prev = parent === null ? null : u64(parent);
        hashes.forEach((h, i) => {
          const hash = u64(h);
          assert.equal(this.blocks.has(hash), false, `block ${hash} stored twice without a removal`);
          this.blocks.set(hash, {
            parent: prev,
            tokens: tokens.slice(i * blockSize, (i + 1) * blockSize) as number[],
            blockSize,
            loraId: loraId as number | null,
            loraName: loraName as string | null,
            medium: medium as string,
          });
          this.storedLora.push({ loraId: loraId as number | null, loraName: loraName as string | null });
          prev = hash;
        });
        this.counts.stored += hashes.length;
        return;
      }
      case 'BlockRemoved': {
        assert.equal(e.length, 3, 'BlockRemoved: tag + block_hashes + medium');
        const [, hashes, medium] = e;
        assert.ok(Array.isArray(hashes) && hashes.length > 0);
        assert.equal(typeof medium, 'string');
        for (const h of hashes) {
          const hash = u64(h);
          assert.ok(this.blocks.delete(hash), `block ${hash} removed but never stored`);
        }
        this.counts.removed += hashes.length;
        return;
      }
      case 'AllBlocksCleared':
        assert.equal(e.length, 1);
        this.blocks.clear();
        this.counts.cleared++;
        return;
      default:
        assert.fail(`unknown event tag ${String(e[0])}`);
    }
  }
}
