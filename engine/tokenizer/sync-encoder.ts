/**
 * Synchronous `encode` over the Hugging Face `tokenizers` Node binding.
 *
 * Why this exists: the binding only offers `Tokenizer.encode(...) → Promise` (the work runs
 * on the libuv pool), and `Tokenizer.encode` is synchronous for callers that cannot await
 * (tests, tools; the engine itself uses the async encode). The main thread cannot wait for
 * its own Promise, so a worker
 * thread owns a second copy of the tokenizer, does the async encode on its own event loop,
 * and the main thread blocks on an `Atomics.wait` until the reply is posted; it then takes
 * the reply off the port with `receiveMessageOnPort` (no event-loop turn needed). Cost: one
 * message round trip (~tens of µs) on top of the encode itself.
 *
 * `open` returns at once: requests posted before the worker is up wait in its port, so the
 * first `encode` also waits for the worker to build its tokenizer. A document the library
 * rejects is reported by that first `encode` (the worker answers every request with the reason).
 *
 * The worker source is inline (eval) so the same code runs from the TypeScript sources
 * (tsx) and from the compiled `dist/` tree without a separate build step for the worker.
 */
import { createRequire } from 'node:module';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
let tokenizer = null;
let startError = null;
try {
  const { Tokenizer } = require(workerData.tokenizersPath);
  tokenizer = Tokenizer.fromString(workerData.tokenizerJson);
  // As hf-tokenizer.ts withoutFileDefaults: the file's own truncation and padding are off.
  tokenizer.disableTruncation();
  tokenizer.disablePadding();
} catch (error) {
  startError = 'the tokenizer could not be built: ' + String(error && error.message ? error.message : error);
}
const port = workerData.port;
const counter = new Int32Array(workerData.counter);
function reply(message) {
  // Post first, then bump the counter: a main thread that sees the new count finds the message.
  port.postMessage(message);
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
}
port.on('message', (request) => {
  if (startError !== null) return reply({ seq: request.seq, error: startError });
  tokenizer.encode(request.text, null, { addSpecialTokens: request.addSpecialTokens }).then(
    (encoding) => reply({ seq: request.seq, ids: Uint32Array.from(encoding.getIds()) }),
    (error) => reply({ seq: request.seq, error: String(error && error.message ? error.message : error) }),
  );
});
`;

/** How long one encode may take before we give up on the worker (a stuck or dead worker must not hang the server). */
const ENCODE_TIMEOUT_MS = 120_000;

interface EncodeReply {
  readonly seq: number;
  readonly ids?: Uint32Array;
  readonly error?: string;
}

export class SyncEncoder {
  private seq = 0;
  private closed = false;
  /** Why the worker is gone, once it is (seen between calls: events cannot fire while we block). */
  private failure: string | null = null;

  private constructor(
    private readonly worker: Worker,
    private readonly port: MessagePort,
    /** Bumped by the worker after each reply it posts. */
    private readonly counter: Int32Array,
  ) {
    worker.on('error', (error: Error) => (this.failure ??= error.message));
    worker.on('exit', (code: number) => (this.failure ??= `exited with code ${code}`));
  }

  /** Starts the worker that builds its own tokenizer from `tokenizerJson` (see the file comment). */
  static open(tokenizerJson: string): SyncEncoder {
    const require = createRequire(import.meta.url);
    const tokenizersPath = require.resolve('tokenizers');
    const counter = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { tokenizersPath, tokenizerJson, port: port2, counter: counter.buffer },
      transferList: [port2],
      // The tsx loader (inherited execArgv) is not needed for this plain-JS worker.
      execArgv: [],
    });
    // The worker must never keep the process alive on its own.
    worker.unref();
    port1.unref();
    return new SyncEncoder(worker, port1, counter);
  }

  encode(text: string, addSpecialTokens: boolean): Uint32Array {
    if (this.closed) throw new Error('tokenizer is closed');
    if (this.failure !== null) throw new Error(`tokenizer encode worker is gone (${this.failure})`);
    const seq = ++this.seq;
    this.port.postMessage({ seq, text, addSpecialTokens });
    const deadline = Date.now() + ENCODE_TIMEOUT_MS;
    for (;;) {
      // Read the counter before looking at the port: a reply posted after this read also
      // bumps the counter, so the wait below cannot miss it.
      const seen = Atomics.load(this.counter, 0);
      const received = receiveMessageOnPort(this.port);
      if (received) {
        const reply = received.message as EncodeReply;
        if (reply.seq !== seq) continue; // a late reply to an earlier, timed-out request
        if (reply.error !== undefined) throw new Error(`tokenizer encode failed: ${reply.error}`);
        return reply.ids!;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`tokenizer encode did not finish within ${ENCODE_TIMEOUT_MS} ms`);
      Atomics.wait(this.counter, 0, seen, remaining);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.close();
    void this.worker.terminate();
  }
}
