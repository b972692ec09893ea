/**
 * What a failed step means. A step fails when the native forward pass throws (a kernel fault,
 * an allocation failure) or when turning its output into events throws (a bug). Either way it
 * is the server's fault, not the client's: the requests with a sequence in that step end with
 * an INTERNAL EngineError (each family's 5xx, or an error event on a stream already started),
 * and nothing else is touched. Waiting requests were not in the step, so they carry on; the
 * failed sequences' KV blocks go back to the pool once the step is over (the step loop reaps
 * aborted sequences), and the blocks that step half-wrote were never keyed in the prefix cache
 * (keys are registered only after a successful step), so no later prompt reuses them.
 */
import { EngineError } from './errors.js';
import type { ScheduledBatch } from './scheduler.js';

export interface StepFault {
  /** The error every request of the step ends with. */
  readonly error: EngineError;
  /** Requests with at least one sequence in the step (a best_of request fails whole). */
  readonly requestIds: ReadonlySet<string>;
}

export type FaultLog = (line: string) => void;

const stderrLog: FaultLog = (line) => process.stderr.write(line + '\n');

/** Counts faults over the engine's life, for the log line an operator greps for. */
export class StepFaults {
  count = 0;

  constructor(private readonly log: FaultLog = stderrLog) {}

  /** The error and the requests a failed step ends; logs the fault once. */
  fault(batch: ScheduledBatch, cause: unknown): StepFault {
    this.count++;
    const reason = cause instanceof Error ? cause.message : String(cause);
    const requestIds = new Set(batch.items.map((i) => i.seq.requestId));
    this.log(
      `prism engine: step fault #${this.count} (${reason}): failing the ${requestIds.size} request(s) of that step; the engine keeps serving`,
    );
    const error = new EngineError(
      'INTERNAL',
      `internal error: the model step running this request failed (${reason}); the server keeps serving, retry the request`,
    );
    return { error, requestIds };
  }
}
