/**
 * Which base-model linear layer a PEFT key adapts, and what that layer is called in the
 * base model's own file (GGUF tensor names for a GGUF base, Hugging Face names for a
 * safetensors base) — for error messages and for the native side, which knows layers by
 * (layer index, target).
 */
export const LORA_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

/** The Hugging Face module path of each target inside a decoder layer (PEFT keys name it). */
export const HF_MODULE: Record<LoraTarget, string> = {
  q: 'self_attn.q_proj',
  k: 'self_attn.k_proj',
  v: 'self_attn.v_proj',
  o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj',
  up: 'mlp.up_proj',
  down: 'mlp.down_proj',
};
const GGUF_TENSOR: Record<LoraTarget, string> = {
  q: 'attn_q',
  k: 'attn_k',
  v: 'attn_v',
  o: 'attn_output',
  gate: 'ffn_gate',
  up: 'ffn_up',
  down: 'ffn_down',
};
const BY_HF = new Map<string, LoraTarget>(LORA_TARGETS.map((t) => [HF_MODULE[t], t]));

export interface ParsedLoraKey {
  /** e.g. "model.layers.3.self_attn.q_proj": the name PEFT matches patterns against. */
  readonly module: string;
  readonly layer: number;
  readonly target: LoraTarget;
  readonly part: 'A' | 'B';
}

const PREFIX = 'base_model.model.';
const KEY = /^model\.layers\.(\d{1,6})\.([a-z_]+\.[a-z_]+)\.lora_([AB])(?:\.[A-Za-z0-9_-]+)?\.weight$/;

/**
 * Parses a PEFT adapter key, or returns why it is refused (embeddings, lm_head, DoRA
 * magnitudes, biases and anything else than a LoRA A/B of the seven linear layers).
 */
export function parseLoraKey(key: string): ParsedLoraKey | string {
  if (!key.startsWith(PREFIX)) return `key '${key}' does not start with '${PREFIX}'`;
  const rest = key.slice(PREFIX.length);
  if (/lora_embedding_[AB]/.test(rest) || /embed_tokens/.test(rest)) {
    return `key '${key}': adapters on embeddings are not supported (linear layers only)`;
  }
  if (/(^|\.)lm_head\./.test(rest))
    return `key '${key}': adapters on lm_head are not supported (linear layers only)`;
  if (/lora_magnitude_vector/.test(rest)) return `key '${key}': DoRA magnitude vectors are not supported`;
  const m = KEY.exec(rest);
  if (!m) {
    return (
      `key '${key}' is not a LoRA A/B weight of a linear layer ` +
      `(model.layers.N.{self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj}.lora_{A,B}.weight)`
    );
  }
  const target = BY_HF.get(m[2]);
  if (!target) return `key '${key}': module '${m[2]}' is not one of the adaptable linear layers`;
  return { module: `model.layers.${m[1]}.${m[2]}`, layer: Number(m[1]), target, part: m[3] as 'A' | 'B' };
}

/** The adapted weight's name in the base model's own file. */
export function baseTensorName(format: 'gguf' | 'safetensors', layer: number, target: LoraTarget): string {
  return format === 'gguf'
    ? `blk.${layer}.${GGUF_TENSOR[target]}.weight`
    : `model.layers.${layer}.${HF_MODULE[target]}.weight`;
}
