/**
 * Turns a PEFT adapter read from disk into a native adapter for one model: the only place
 * the engine's adapter records meet native/native.ts.
 */
import {
  createAdapter,
  modelInfo,
  type AdapterHandle,
  type ModelHandle,
  type ModelInfo,
} from '../../native/native.js';
import { readPeftAdapter, type BaseShape, type PeftAdapter } from './peft-reader.js';

export function baseShapeOf(info: ModelInfo): BaseShape {
  return {
    format: info.format,
    numLayers: info.numLayers,
    hiddenSize: info.hiddenSize,
    intermediateSize: info.intermediateSize,
    numHeads: info.numHeads,
    numKvHeads: info.numKvHeads,
    headDim: info.headDim,
  };
}

export interface LoadedAdapter {
  readonly peft: PeftAdapter;
  readonly handle: AdapterHandle;
}

/** Reads `dir` (already path-checked) and copies its matrices into native storage. */
export function loadNativeAdapter(
  model: ModelHandle,
  dir: string,
  storage: 'F32' | 'F16' = 'F16',
): LoadedAdapter {
  const peft = readPeftAdapter(dir, baseShapeOf(modelInfo(model)));
  return { peft, handle: createAdapter(model, peft.layers, storage) };
}
