/**
 * Which device an engine runs on (EngineOptions.device: 'cpu', 'cuda', 'cuda:N'), the clear
 * error when CUDA is asked for and cannot be used, and the KV budget a CUDA device leaves
 * once the weights are on it. The scheduler, plans and everything above are the same on
 * every device; native/native.ts routes the calls.
 */
import {
  CUDA_KERNELS,
  cudaDevices,
  parseDevice,
  type CudaDeviceInfo,
  type CudaKernels,
  type Device,
  type ModelInfo,
} from '../native/native.js';
import { EngineError } from './errors.js';
import type { ResolvedEngineOptions } from './options.js';

/** The device named by the options; INVALID_ARGUMENT naming `device` for a malformed name. */
export function resolveDevice(device: string | undefined): Device {
  try {
    return parseDevice(device ?? 'cpu');
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `engine option device: ${(e as Error).message}`, 'device');
  }
}

/**
 * The CUDA decode kernels the options ask for (EngineOptions.cudaKernels), or undefined for
 * the default; INVALID_ARGUMENT naming `cudaKernels` for another name, or for a CPU engine
 * (the choice would have nothing to apply to: refused rather than ignored).
 */
export function resolveCudaKernels(kernels: string | undefined, device: Device): CudaKernels | undefined {
  if (kernels === undefined) return undefined;
  if (!(CUDA_KERNELS as readonly string[]).includes(kernels))
    throw new EngineError(
      'INVALID_ARGUMENT',
      `engine option cudaKernels: must be ${CUDA_KERNELS.join(' or ')}, got '${kernels}'`,
      'cudaKernels',
    );
  if (device === 'cpu')
    throw new EngineError(
      'INVALID_ARGUMENT',
      'engine option cudaKernels: chooses CUDA kernels, but the engine runs on the CPU (set device to cuda)',
      'cudaKernels',
    );
  return kernels as CudaKernels;
}

/**
 * The CUDA device `device` names, or an error saying why it cannot be used: the CUDA backend
 * was not built (no nvcc at install time), the driver or library cannot be loaded, or there
 * is no such device.
 */
export function requireCudaDevice(device: Device): CudaDeviceInfo {
  let devices: CudaDeviceInfo[];
  try {
    devices = cudaDevices();
  } catch (e) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `device ${device}: CUDA cannot be used on this machine (${(e as Error).message}). ` +
        'The CUDA backend is built by `npm install` where nvcc and cuBLASLt are installed; ' +
        'without a GPU, run on the CPU (--device cpu).',
      'device',
    );
  }
  const found = devices.find((d) => d.device === device);
  if (!found) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `device ${device}: no such CUDA device (${devices.length === 0 ? 'none' : devices.map((d) => d.device).join(', ')} visible)`,
      'device',
    );
  }
  return found;
}

/**
 * Device memory a context takes besides its KV pool: the activation buffers, scratch and
 * sampling state that native/cuda/src/context.cu allocates for (maxBatchTokens, maxSeqs).
 */
function deviceScratchBytes(o: ResolvedEngineOptions, m: ModelInfo): number {
  const T = o.maxPrefillTokens;
  const S = o.maxBatchSize;
  const D = m.hiddenSize;
  const I = m.intermediateSize;
  const q = m.numHeads * m.headDim;
  const qkv = q + 2 * m.numKvHeads * m.headDim;
  const activations = 4 * T * (D + Math.max(D, q) + qkv + q + 3 * I + D);
  const bf16 = T > 8 ? 2 * T * Math.max(D, I, q) : 0;
  const logits = 4 * S * m.vocabSize;
  const splits = 4 * Math.min(T, 256) * m.numHeads * (m.headDim + 2) * 16;
  const penalties = 4 * Math.min(S, 64) * m.vocabSize;
  // The bf16 band quantized weights are decoded into for the GEMMs (at most 256 MiB, at most
  // the largest matrix), cuBLASLt's workspace, the runtime's own.
  const largest = Math.max(m.vocabSize * D, 2 * I * D);
  const fixed = Math.min(256 * 2 ** 20, 2 * largest) + 96 * 2 ** 20;
  // The fast kernel set's split-K partials (16 splits × 8 tokens of the widest matrix's rows,
  // gemvFastPartialFloats) and counters.
  const widest = Math.max(m.vocabSize, 2 * I, qkv, D);
  const fast = o.cudaKernels === 'fast' ? 4 * 16 * 8 * (Math.ceil(widest / 16) + 1) * 16 + 8 * widest : 0;
  return activations + bf16 + logits + splits + penalties + fixed + fast;
}

/**
 * The KV budget on a CUDA device when none was configured (config npuMemSize -1): 90% of the
 * memory left free after the weights, less the context's scratch (vLLM's
 * gpu_memory_utilization, 0.9).
 */
export function defaultDeviceKvBytes(freeBytes: number, o: ResolvedEngineOptions, m: ModelInfo): number {
  return Math.max(0, Math.floor(0.9 * freeBytes - deviceScratchBytes(o, m)));
}
