/**
 * Split prefill/decode flags shared by `prism engine` and `prism serve` (engine/kv-transfer/):
 * the engine's role and the lease and transfer deadlines.
 */
import { ENGINE_ROLES, type EngineRole } from '../engine/api.js';
import type { EngineOptions } from '../engine/options.js';

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
  const out: { role?: EngineRole; kvLeaseMs?: number; kvTransferTimeoutMs?: number } = {};
  if (values.role !== undefined) {
    const role = ENGINE_ROLES.find((r) => r === values.role);
    if (!role) throw error(`--role: must be one of ${ENGINE_ROLES.join(', ')}, got '${values.role}'`);
    out.role = role;
  }
  for (const [flag, key] of [
    ['kv-lease-ms', 'kvLeaseMs'],
    ['kv-transfer-timeout-ms', 'kvTransferTimeoutMs'],
  ] as const) {
    const v = values[flag];
    if (v === undefined) continue;
    if (!/^\d+$/.test(v) || Number(v) < 100 || Number(v) > 3_600_000)
      throw error(`--${flag}: must be an integer in [100, 3600000], got '${v}'`);
    out[key] = Number(v);
  }
  return out;
}
