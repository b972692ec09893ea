/** `--scheduling-policy fcfs|priority` of `prism serve` and `prism engine` (vLLM's flag). */
import { SCHEDULING_POLICIES, type SchedulingPolicy } from '../engine/options.js';

export const schedulingFlagOption = { 'scheduling-policy': { type: 'string' } } as const;

export const schedulingHelp = `  --scheduling-policy P fcfs (default: by arrival) or priority (by the request's priority,
                        lower first, ties by arrival; a higher-priority request preempts
                        lower-priority running ones when it cannot be scheduled)`;

/** The engine option of the flag; `usage` makes the CLI's usage error. */
export function schedulingPolicyFromFlags(
  values: { 'scheduling-policy'?: string },
  usage: (message: string) => Error,
): { schedulingPolicy?: SchedulingPolicy } {
  const v = values['scheduling-policy'];
  if (v === undefined) return {};
  if (!(SCHEDULING_POLICIES as readonly string[]).includes(v))
    throw usage(`--scheduling-policy: must be one of ${SCHEDULING_POLICIES.join(', ')}, got '${v}'`);
  return { schedulingPolicy: v as SchedulingPolicy };
}
