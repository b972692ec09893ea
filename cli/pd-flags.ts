/**
 * Split prefill/decode flags shared by `prism engine` and `prism serve` (engine/kv-transfer/):
 * the engine's role and the lease and transfer deadlines.
 */
import { ENGINE_ROLES, type EngineRole } from '../engine/api.js';
import type { EngineOptions } from '../engine/options.js';
import { integerFlags } from './integer-flags.js';

export const pdFlagOptions = {
  role: { type: 'string' },
  'kv-lease-ms': { type: 'string' },
  'kv-transfer-timeout-ms': { type: 'string' },
} as const;

export const pdHelp = `  --role ROLE           split prefill/decode: prefill, decode or mixed (default mixed: whole
                        requests and both halves of split ones; also POST /v1/role/{role})
  --kv-lease-ms N       how long a prompt's KV waits for the decode engine to pull it (30000)
  --kv-transfer-timeout-ms N
                        deadline of one KV pull or hand-off (10000)`;

export function pdFromFlags(
  values: { role?: string; 'kv-lease-ms'?: string; 'kv-transfer-timeout-ms'?: string },
  error: (message: string) => Error,
): Pick<EngineOptions, 'role' | 'kvLeaseMs' | 'kvTransferTimeoutMs'> {
  let role: EngineRole | undefined;
  if (values.role !== undefined) {
    role = ENGINE_ROLES.find((r) => r === values.role);
    if (!role) throw error(`--role: must be one of ${ENGINE_ROLES.join(', ')}, got '${values.role}'`);
  }
  const ms = integerFlags(
    values,
    [
      ['kv-lease-ms', 'kvLeaseMs'],
      ['kv-transfer-timeout-ms', 'kvTransferTimeoutMs'],
    ],
    [100, 3_600_000],
    error,
  );
  return { ...(role ? { role } : {}), ...ms };
}
