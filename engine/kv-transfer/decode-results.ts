/**
 * The decode side's results hub (MindIE's `GET /dresult`): requests handed to this engine
 * have no caller of their own; their events go, each tagged with its request id, to the one
 * coordinator that holds the results stream. A new holder ends the previous one's stream (as
 * MindIE closes the old connection). A hand-off is refused while nobody holds the stream, and
 * when the holder goes away the requests whose results it was reading are cancelled: nobody
 * could read them any more, so their KV blocks are freed at once.
 */
import { EngineError } from '../errors.js';
import { EventQueue } from '../event-queue.js';
import type { DecodeResult, GenerateEvent } from '../types.js';

interface Holder {
  readonly queue: EventQueue<DecodeResult>;
  readonly requests: Set<string>;
}

export class DecodeResultsHub {
  private holder: Holder | null = null;

  constructor(
    /** Cancels a handed-off request whose results nobody reads. */
    private readonly cancel: (requestId: string) => void,
  ) {}

  get held(): boolean {
    return this.holder !== null;
  }

  /** The results stream; leaving it (or `signal`) lets go of the requests it was reading. */
  subscribe(signal?: AbortSignal): AsyncIterable<DecodeResult> {
    const previous = this.holder;
    const holder: Holder = {
      requests: new Set(),
      queue: new EventQueue<DecodeResult>(() => this.letGo(holder)),
    };
    this.holder = holder;
    holder.queue.push({ requestId: '', held: true });
    if (previous) {
      // Its requests' results go to the new holder from now on (MindIE moves them too).
      for (const id of previous.requests) holder.requests.add(id);
      previous.requests.clear();
      previous.queue.end(new EngineError('UNAVAILABLE', 'another coordinator holds the decode results now'));
    }
    if (signal) {
      if (signal.aborted) this.letGo(holder);
      else signal.addEventListener('abort', () => this.letGo(holder), { once: true });
    }
    return holder.queue;
  }

  /** Refuses a hand-off that nobody would read the results of. */
  checkHeld(): void {
    if (!this.holder)
      throw new EngineError(
        'UNAVAILABLE',
        'no coordinator holds the decode results stream (DecodeResults, GET /dresult) of this engine',
      );
  }

  /** Forwards a handed-off request's events (and its failure) to the holder. */
  async forward(requestId: string, events: AsyncIterable<GenerateEvent>): Promise<void> {
    this.holder?.requests.add(requestId);
    try {
      for await (const event of events) {
        const h = this.holder;
        if (!h || !h.requests.has(requestId)) return; // let go: leaving the loop cancels it
        h.queue.push({ requestId, event });
      }
    } catch (e) {
      const error = e instanceof EngineError ? e : new EngineError('GENERATION_FAILED', String(e));
      if (this.holder?.requests.has(requestId)) this.holder.queue.push({ requestId, error });
    } finally {
      this.holder?.requests.delete(requestId);
    }
  }

  /** Ends the current holder's stream (engine close). */
  close(): void {
    const h = this.holder;
    if (!h) return;
    this.holder = null;
    h.queue.end();
    for (const id of h.requests) this.cancel(id);
  }

  private letGo(holder: Holder): void {
    if (this.holder !== holder) return;
    this.holder = null;
    holder.queue.end();
    for (const id of holder.requests) this.cancel(id);
    holder.requests.clear();
  }
}
