/**
 * `--device cpu|cuda|cuda:N` of `prism serve` and `prism engine` (it overrides the config's
 * ModelConfig[0].backendType / npuDeviceIds). The name is checked here; whether that device
 * can be used is checked when the engine loads (engine/device.ts).
 */
export const deviceFlagOption = { device: { type: 'string' } } as const;

export const deviceHelp = `  --device DEVICE       cpu, cuda or cuda:N (default: the config's backendType "cuda" on
                        npuDeviceIds[0][0], else cpu)`;

/** The flag's value, or a usage message naming the rule. */
export function parseDeviceFlag(value: string | undefined): { device?: string; error?: string } {
  if (value === undefined) return {};
  if (value === 'cpu' || value === 'cuda' || /^cuda:\d{1,3}$/.test(value)) return { device: value };
  return { error: `--device: must be cpu, cuda or cuda:N, got '${value}'` };
}
