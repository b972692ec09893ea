/**
 * readPeftAdapter on a worker thread (read-worker.ts): a dynamic load reads and converts
 * its safetensors there while the event loop keeps serving. Errors come back as the same
 * AdapterFormatError (or plain Error for I/O) the synchronous reader throws.
 */
import { Worker } from 'node:worker_threads';
import { AdapterFormatError } from './peft-config.js';
import type { BaseShape, PeftAdapter } from './peft-reader.js';
import type { ReadWorkerInit, ReadWorkerReply } from './read-worker.js';

export function readPeftAdapterOffThread(dir: string, base: BaseShape): Promise<PeftAdapter> {
  const init: ReadWorkerInit = { dir, base };
  // Source tree (tsx): register tsx's loader in the thread (workers do not inherit it), then
  // load the TypeScript source; compiled tree: the .js next to this one.
  const worker = import.meta.url.endsWith('.ts')
    ? new Worker(
        `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register();` +
          ` return import(${JSON.stringify(new URL('./read-worker.ts', import.meta.url).href)}); });`,
        { eval: true, workerData: init },
      )
    : new Worker(new URL('./read-worker.js', import.meta.url), { workerData: init });
  return new Promise<PeftAdapter>((resolve, reject) => {
    let settled = false;
    worker.once('message', (reply: ReadWorkerReply) => {
      settled = true;
      if (reply.ok) resolve(reply.adapter);
      else reject(reply.format ? new AdapterFormatError(reply.message) : new Error(reply.message));
    });
    worker.once('error', (e) => {
      if (!settled) reject(e);
      settled = true;
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the adapter reading thread exited (code ${code}) before answering`));
      settled = true;
    });
  });
}
