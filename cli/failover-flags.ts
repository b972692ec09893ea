/**
 * `prism gateway`'s fault flags (engine/failover/): whether a request whose engine failed
 * before its client saw output is sent to another engine, and the health monitor's timing.
 */
import type { HealthOptions } from '../engine/api.js';
import { integerFlags } from './integer-flags.js';

export const failoverFlagOptions = {
  retry: { type: 'string' },
  'health-interval-ms': { type: 'string' },
  'health-timeout-ms': { type: 'string' },
  'stall-timeout-ms': { type: 'string' },
} as const;

export const failoverHelp = `  --retry on|off        send a request whose engine failed (died, broke its stream, stopped
                        answering) before any of the answer reached the client to another
                        engine, each at most once, same seed (default on)
  --health-interval-ms N
                        how often every engine is asked for its status (1000; 200 with
                        --prefill/--decode, whose picker reads the same answers)
  --health-timeout-ms N an engine that does not answer within this, twice in a row, is out of
                        rotation and its requests are retried (5000)
  --stall-timeout-ms N  an engine with requests running that generates nothing for this long
                        (a step that never returns) is out of rotation too (300000)`;

export interface FailoverFlags {
  readonly retry: boolean;
  readonly health: Partial<HealthOptions>;
}

type Values = { [K in keyof typeof failoverFlagOptions]?: string };

export function failoverFromFlags(values: Values, error: (message: string) => Error): FailoverFlags {
  const retry = values.retry ?? 'on';
  if (retry !== 'on' && retry !== 'off') throw error(`--retry: must be on or off, got '${retry}'`);
  const health = integerFlags(
    values,
    [
      ['health-interval-ms', 'intervalMs'],
      ['health-timeout-ms', 'timeoutMs'],
      ['stall-timeout-ms', 'stallMs'],
    ],
    [50, 3_600_000],
    error,
  );
  return { retry: retry === 'on', health };
}
