/**
 * The adapter-reading thread: reads one PEFT directory (peft-reader.ts: bounds-checked
 * safetensors parse, F16/BF16 widening, finiteness checks — up to tens of millions of
 * values for a rank-64 adapter) and posts the matrices back, their buffers transferred
 * rather than copied. One thread per load (read-off-thread.ts), so a load never stalls
 * the event loop that serves requests.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AdapterFormatError } from './peft-config.js';
import { readPeftAdapter, type BaseShape, type PeftAdapter } from './peft-reader.js';

export interface ReadWorkerInit {
  readonly dir: string;
  readonly base: BaseShape;
}

export type ReadWorkerReply =
  | { readonly ok: true; readonly adapter: PeftAdapter }
  | { readonly ok: false; readonly message: string; readonly format: boolean };

const { dir, base } = workerData as ReadWorkerInit;
let reply: ReadWorkerReply;
let transfer: ArrayBuffer[] = [];
try {
  const adapter = readPeftAdapter(dir, base);
  reply = { ok: true, adapter };
  transfer = adapter.layers.flatMap((l) => [l.a.buffer as ArrayBuffer, l.b.buffer as ArrayBuffer]);
} catch (e) {
  reply = {
    ok: false,
    message: e instanceof Error ? e.message : String(e),
    format: e instanceof AdapterFormatError,
  };
}
parentPort!.postMessage(reply, transfer);
