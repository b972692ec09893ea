/**
 * How the step loop ends the requests it cannot serve, each as its own kind of failure:
 * a step that failed (the server's fault: step-fault.ts says what that means), a bug in the
 * loop itself (every live request fails, the process stays up), and a queue head that can
 * never fit in the KV pool (that request alone fails, with the pool's size in the message).
 */
import type { KvPool } from './kv-pool.js';
import { EngineError } from './errors.js';
import type { LiveRequest, RequestTable } from './live-request.js';
import type { ScheduledBatch, Scheduler } from './scheduler.js';
import { StepFaults } from './step-fault.js';

export interface LoopFailureDeps {
  readonly requests: RequestTable;
  readonly scheduler: Scheduler;
  readonly blocks: KvPool;
  /** Ends a request with an error event (the output processor's abort). */
  readonly abort: (req: LiveRequest, failure: { message: string; fault?: EngineError }) => void;
}

export class LoopFailures {
  private readonly faults = new StepFaults();

  constructor(private readonly d: LoopFailureDeps) {}

  /** A step threw (native fault, or a bug turning its output into events): fails its requests. */
  batch(batch: ScheduledBatch, e: unknown): void {
    const { error, requestIds } = this.faults.fault(batch, e);
    for (const id of requestIds) {
      const req = this.d.requests.get(id);
      if (req) this.d.abort(req, { message: error.message, fault: error });
    }
  }

  /** A bug in the loop itself must not take the process down: fail every live request. */
  all(e: unknown): void {
    const fault = new EngineError(
      'INTERNAL',
      `engine step loop failed: ${e instanceof Error ? e.message : String(e)}`,
    );
    for (const req of this.d.requests.all()) {
      for (const s of req.seqs) s.inFlight = false;
      this.d.abort(req, { message: fault.message, fault });
    }
    const { scheduler } = this.d;
    for (const s of [...scheduler.running, ...scheduler.waiting]) scheduler.finish(s);
  }

  /** Nothing could be scheduled with nothing running: the head request can never fit. */
  unschedulable(): void {
    const head = this.d.scheduler.waiting[0];
    const req = head && this.d.requests.get(head.requestId);
    if (!req) {
      if (head) this.d.scheduler.finish(head);
      return;
    }
    const { numBlocks, blockSize } = this.d.blocks;
    this.d.abort(req, {
      message: `request needs more KV blocks than the pool has (${numBlocks} blocks of ${blockSize})`,
    });
  }
}
