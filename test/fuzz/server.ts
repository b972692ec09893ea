/**
 * The server the fuzzer runs against: the test harness (real engine, gRPC, every listener) with
 * generation capped at a few tokens (`maxIterTimes`) and `n`/`best_of` at 4, so thousands of
 * cases fit in a CI minute while every code path still runs.
 */
import { startHarness, type Harness } from '../gateways-harness.js';

const FUZZ_ENGINE = { maxIterTimes: 4, maxN: 4 } as const;

export function startFuzzServer(): Promise<Harness> {
  return startHarness(undefined, { engine: FUZZ_ENGINE });
}

export const rssMb = (): number => Math.round(process.memoryUsage().rss / 2 ** 20);

/** Live JS heap after a full collection when node runs with --expose-gc (else as it is), MB. */
export function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Math.round(process.memoryUsage().heapUsed / 2 ** 20);
}
