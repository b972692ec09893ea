/**
 * Reads a PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors)
 * into per-layer A/B matrices checked against the base model's shapes. Everything that
 * PEFT would compute differently from "y += scale · B·(A·x) on a linear layer" is refused
 * with a message naming the key or the config field. The path itself is checked before
 * (rules.ts, checkAdapterPath); this module trusts nothing inside the files.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AdapterFormatError, moduleScale, parsePeftConfig, type PeftLoraConfig } from './peft-config.js';
import { baseTensorName, parseLoraKey, type LoraTarget } from './names.js';
import { SafetensorsError, SafetensorsFile, type SafetensorsTensor } from './safetensors.js';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';
const MAX_CONFIG_BYTES = 1024 * 1024;

/** The base-model shapes an adapter must fit (a subset of native ModelInfo). */
export interface BaseShape {
  readonly format: 'gguf' | 'safetensors';
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/** One adapted linear layer: y[out] += scale · B[out × rank] · (A[rank × in] · x[in]). */
interface LoraLayerWeights {
  readonly layer: number;
  readonly target: LoraTarget;
  readonly rank: number;
  readonly scale: number;
  /** [rank × in], row-major, as PEFT stores lora_A.weight. */
  readonly a: Float32Array;
  /** [out × rank], row-major, as PEFT stores lora_B.weight, in Hugging Face row order. */
  readonly b: Float32Array;
}

export interface PeftAdapter {
  readonly dir: string;
  readonly config: PeftLoraConfig;
  readonly layers: readonly LoraLayerWeights[];
  /** Largest rank of any adapted layer (what maxLoraRank bounds). */
  readonly rank: number;
}

export function targetShape(
  base: BaseShape,
  target: LoraTarget,
): { inFeatures: number; outFeatures: number } {
  const q = base.numHeads * base.headDim;
  const kv = base.numKvHeads * base.headDim;
  switch (target) {
    case 'q':
      return { inFeatures: base.hiddenSize, outFeatures: q };
    case 'k':
    case 'v':
      return { inFeatures: base.hiddenSize, outFeatures: kv };
    case 'o':
      return { inFeatures: q, outFeatures: base.hiddenSize };
    case 'gate':
    case 'up':
      return { inFeatures: base.hiddenSize, outFeatures: base.intermediateSize };
    case 'down':
      return { inFeatures: base.intermediateSize, outFeatures: base.hiddenSize };
  }
}

export function readPeftAdapter(dir: string, base: BaseShape): PeftAdapter {
  const configPath = join(dir, ADAPTER_CONFIG);
  const weightsPath = join(dir, ADAPTER_WEIGHTS);
  for (const p of [configPath, weightsPath]) {
    let ok = false;
    try {
      ok = statSync(p).isFile();
    } catch {
      ok = false;
    }
    if (!ok) throw new AdapterFormatError(`No adapter found for ${dir}: missing ${p}`);
  }
  if (statSync(configPath).size > MAX_CONFIG_BYTES) {
    throw new AdapterFormatError(`${configPath}: larger than ${MAX_CONFIG_BYTES} bytes`);
  }
  const config = parsePeftConfig(readFileSync(configPath, 'utf8'), configPath);
  let file: SafetensorsFile;
  try {
    file = SafetensorsFile.read(weightsPath);
  } catch (err) {
    if (err instanceof SafetensorsError) throw new AdapterFormatError(err.message);
    throw err;
  }
  const fail = (why: string): never => {
    throw new AdapterFormatError(`${weightsPath}: ${why}`);
  };

  // Pair the A and B of each module.
  const modules = new Map<
    string,
    { layer: number; target: LoraTarget; A?: SafetensorsTensor; B?: SafetensorsTensor }
  >();
  for (const [key, t] of file.tensors) {
    const parsed = parseLoraKey(key);
    if (typeof parsed === 'string') fail(parsed);
    const p = parsed as Exclude<typeof parsed, string>;
    if (p.layer >= base.numLayers)
      fail(`key '${key}': layer ${p.layer} does not exist (the base model has ${base.numLayers})`);
    const m = modules.get(p.module) ?? { layer: p.layer, target: p.target };
    if (m[p.part]) fail(`key '${key}': a second lora_${p.part} for ${p.module}`);
    m[p.part] = t;
    modules.set(p.module, m);
  }
  if (modules.size === 0) fail('holds no LoRA weights');

  const layers: LoraLayerWeights[] = [];
  let maxRank = 0;
  for (const [module, m] of modules) {
    if (!m.A || !m.B) fail(`${module}: has lora_${m.A ? 'A' : 'B'} but no lora_${m.A ? 'B' : 'A'}`);
    const A = m.A as SafetensorsTensor;
    const B = m.B as SafetensorsTensor;
    const tensorName = baseTensorName(base.format, m.layer, m.target);
    const { inFeatures, outFeatures } = targetShape(base, m.target);
    const { rank, scale } = moduleScale(config, module);
    const shape = (t: SafetensorsTensor) => `[${t.shape.join(', ')}]`;
    if (A.shape.length !== 2 || A.shape[0] !== rank || A.shape[1] !== inFeatures) {
      fail(
        `${module}.lora_A.weight: shape ${shape(A)} must be [rank ${rank}, in ${inFeatures}] ` +
          `to adapt ${tensorName} (rank from adapter_config.json r / rank_pattern)`,
      );
    }
    if (B.shape.length !== 2 || B.shape[0] !== outFeatures || B.shape[1] !== rank) {
      fail(
        `${module}.lora_B.weight: shape ${shape(B)} must be [out ${outFeatures}, rank ${rank}] to adapt ${tensorName}`,
      );
    }
    if (!Number.isFinite(scale)) fail(`${module}: scale lora_alpha / r is not finite`);
    const a = file.float32(A);
    const b = file.float32(B);
    for (const [name, v] of [
      ['lora_A', a],
      ['lora_B', b],
    ] as const) {
      for (let i = 0; i < v.length; i++) {
        if (!Number.isFinite(v[i])) fail(`${module}.${name}.weight: element ${i} is not finite`);
      }
    }
    layers.push({ layer: m.layer, target: m.target, rank, scale, a, b });
    maxRank = Math.max(maxRank, rank);
  }
  layers.sort((x, y) => x.layer - y.layer || x.target.localeCompare(y.target));
  return { dir, config, layers, rank: maxRank };
}
