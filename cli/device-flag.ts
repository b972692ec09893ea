/**
 * `--device cpu|cuda|cuda:N` of `prism serve` and `prism engine` (it overrides the config's
 * ModelConfig[0].backendType / npuDeviceIds), and `--cuda-kernels legacy|fast` (the CUDA
 * decode kernels, EngineOptions.cudaKernels). The names are checked here; whether that device
 * can be used, and that the kernel choice has a CUDA device to apply to, when the engine
 * loads (engine/device.ts).
 */
import { CUDA_KERNELS, type CudaKernels } from '../native/native.js';

export const deviceFlagOption = { device: { type: 'string' }, 'cuda-kernels': { type: 'string' } } as const;

export const deviceHelp = `  --device DEVICE       cpu, cuda or cuda:N (default: the config's backendType "cuda" on
                        npuDeviceIds[0][0], else cpu)
  --cuda-kernels SET    the CUDA decode kernels: legacy (default) or fast (the fused
                        decode layer; legacy stays the default until it has run on a GPU)`;

/** The flags' values, or a usage message naming the rule. */
export function parseDeviceFlag(
  value: string | undefined,
  kernels?: string,
): { device?: string; cudaKernels?: CudaKernels; error?: string } {
  const out: { device?: string; cudaKernels?: CudaKernels } = {};
  if (kernels !== undefined) {
    if (!(CUDA_KERNELS as readonly string[]).includes(kernels))
      return { error: `--cuda-kernels: must be ${CUDA_KERNELS.join(' or ')}, got '${kernels}'` };
    out.cudaKernels = kernels as CudaKernels;
  }
  if (value === undefined) return out;
  if (value === 'cpu' || value === 'cuda' || /^cuda:\d{1,3}$/.test(value)) return { ...out, device: value };
  return { error: `--device: must be cpu, cuda or cuda:N, got '${value}'` };
}
