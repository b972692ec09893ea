/**
 * One decode engine's results stream (DecodeResults, MindIE's `/dresult`) as the coordinator
 * holds it: open for the engine's lifetime, its results sorted into a queue per request id. A
 * stream that breaks fails the requests waiting on it with UNAVAILABLE and is opened again.
 */
import { EngineError } from '../errors.js';
import { EventQueue } from '../event-queue.js';
import type { GenerateEvent } from '../types.js';
import type { Member } from './picker.js';
import type { DecodeResult } from '../types.js';

const RECONNECT_MS = 500;

/** One decode engine's results stream, sorted into a queue per request id. */
export class ResultsLink {
  private readonly waiting = new Map<string, EventQueue<GenerateEvent>>();
  private readonly controller = new AbortController();
  private connected = false;
  private closed = false;
  private readonly ready: Promise<void>;
  private markReady: () => void = () => {};

  constructor(
    private readonly m: Member,
    private readonly log: (line: string) => void,
  ) {
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    void this.run();
  }

  /** The stream is open: hand-offs to its engine are read. */
  get isOpen(): boolean {
    return this.connected;
  }

  /** Resolves once the stream is open (or after `ms`, whichever is first). */
  async opened(ms: number): Promise<boolean> {
    if (this.connected) return true;
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, ms).unref())]);
    return this.connected;
  }

  register(id: string): EventQueue<GenerateEvent> {
    if (!this.connected)
      throw new EngineError('UNAVAILABLE', `the decode engine at ${this.m.address} is not reachable`);
    const q = new EventQueue<GenerateEvent>();
    this.waiting.set(id, q);
    return q;
  }

  unregister(id: string): void {
    this.waiting.delete(id);
  }

  close(): void {
    this.closed = true;
    this.controller.abort();
    this.failAll(new EngineError('UNAVAILABLE', 'the coordinator is stopping'));
  }

  private failAll(error: EngineError): void {
    for (const q of this.waiting.values()) q.end(error);
    this.waiting.clear();
  }

  private deliver(r: DecodeResult): void {
    if ('held' in r) {
      this.connected = true;
      this.markReady();
      return;
    }
    const q = this.waiting.get(r.requestId);
    if (!q) {
      // Results of a request nobody waits for (its client went away): stop it.
      void this.m.engine.cancel(r.requestId).catch(() => {});
      return;
    }
    if ('error' in r) {
      this.waiting.delete(r.requestId);
      q.end(r.error);
      return;
    }
    q.push(r.event);
    if (r.event.type === 'finish') {
      this.waiting.delete(r.requestId);
      q.end();
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        // The stream's first result says the engine took it (then hand-offs to it are accepted).
        for await (const r of this.m.engine.decodeResults(this.controller.signal)) this.deliver(r);
        if (!this.closed) throw new EngineError('UNAVAILABLE', 'the results stream ended');
      } catch (e) {
        if (this.closed) return;
        const why = e instanceof Error ? e.message : String(e);
        if (this.connected) this.log(`decode engine ${this.m.address}: results stream lost (${why})`);
        this.connected = false;
        this.failAll(
          new EngineError('UNAVAILABLE', `the decode engine at ${this.m.address} went away: ${why}`),
        );
        await new Promise((r) => setTimeout(r, RECONNECT_MS).unref());
      }
    }
  }
}
