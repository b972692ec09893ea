/**
 * adapter_config.json of a PEFT LoRA adapter: the fields that decide what the adapter
 * computes, checked so that an adapter Prism would apply differently from PEFT is refused
 * (naming the field) rather than served wrong.
 *
 * Scale of a module: lora_alpha / r (or / sqrt(r) with use_rslora), where r and lora_alpha
 * come from rank_pattern / alpha_pattern when a pattern matches the module's name, exactly
 * as PEFT's get_pattern_key matches (`(.*\.)?(pattern)$`, first matching key wins).
 */
export class AdapterFormatError extends Error {
  override readonly name = 'AdapterFormatError';
}

export interface PeftLoraConfig {
  readonly r: number;
  readonly loraAlpha: number;
  readonly rankPattern: ReadonlyMap<string, number>;
  readonly alphaPattern: ReadonlyMap<string, number>;
  /** As written: a list of module names or one regular expression string. */
  readonly targetModules: readonly string[] | string | null;
  readonly useRslora: boolean;
  /**
   * Read and accepted: it only transposes a merged delta for Conv1D-style (GPT-2) layers;
   * PEFT resets it to false for nn.Linear layers, the only kind Prism adapts.
   */
  readonly fanInFanOut: boolean;
  readonly baseModelNameOrPath: string | null;
}

const MAX_RANK = 65536;

export function parsePeftConfig(text: string, where: string): PeftLoraConfig {
  const fail = (why: string): never => {
    throw new AdapterFormatError(`${where}: ${why}`);
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return fail(`not valid JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return fail('must be a JSON object');
  const c = raw as Record<string, unknown>;

  const peftType = c.peft_type ?? 'LORA';
  if (peftType !== 'LORA') fail(`peft_type: ${JSON.stringify(peftType)} is not supported (only "LORA")`);
  if (c.use_dora === true) fail('use_dora: DoRA adapters are not supported (only plain LoRA)');
  const bias = c.bias ?? 'none';
  if (bias !== 'none')
    fail(`bias: ${JSON.stringify(bias)} is not supported (only "none": Prism adapts weights, not biases)`);
  if (c.lora_bias === true) fail('lora_bias: a bias on lora_B is not supported (only plain LoRA)');
  // Variants that change what the adapter computes (activated LoRA, LoRA on raw parameters,
  // layer replication): refused rather than served as plain LoRA.
  for (const field of ['alora_invocation_tokens', 'target_parameters', 'layer_replication'] as const) {
    const v = c[field];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) {
      fail(`${field}: ${JSON.stringify(v)} is not supported (only plain LoRA on linear layers)`);
    }
  }
  for (const field of ['modules_to_save', 'trainable_token_indices'] as const) {
    const v = c[field];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) {
      fail(
        `${field}: ${JSON.stringify(v)} is not supported (only LoRA on linear layers; no full-module copies)`,
      );
    }
  }
  const positiveInt = (v: unknown, field: string): number => {
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_RANK) {
      fail(`${field}: must be an integer in [1, ${MAX_RANK}], got ${JSON.stringify(v)}`);
    }
    return v as number;
  };
  const finite = (v: unknown, field: string): number => {
    if (typeof v !== 'number' || !Number.isFinite(v))
      fail(`${field}: must be a finite number, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const patterns = (
    v: unknown,
    field: string,
    check: (x: unknown, f: string) => number,
  ): Map<string, number> => {
    const out = new Map<string, number>();
    if (v === undefined || v === null) return out;
    if (typeof v !== 'object' || Array.isArray(v)) fail(`${field}: must be an object of pattern → number`);
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      try {
        new RegExp(`^(.*\\.)?(${k})$`);
      } catch {
        fail(`${field}: key ${JSON.stringify(k)} is not a valid regular expression`);
      }
      out.set(k, check(x, `${field}[${JSON.stringify(k)}]`));
    }
    return out;
  };

  const r = positiveInt(c.r ?? 8, 'r');
  const loraAlpha = finite(c.lora_alpha ?? 8, 'lora_alpha');
  const rankPattern = patterns(c.rank_pattern, 'rank_pattern', positiveInt);
  const alphaPattern = patterns(c.alpha_pattern, 'alpha_pattern', finite);

  let targetModules: readonly string[] | string | null = null;
  const tm = c.target_modules;
  if (typeof tm === 'string') targetModules = tm;
  else if (Array.isArray(tm) && tm.every((x) => typeof x === 'string')) targetModules = tm as string[];
  else if (tm !== undefined && tm !== null)
    fail('target_modules: must be a list of module names or a string');

  const flag = (v: unknown, field: string): boolean => {
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') fail(`${field}: must be true or false`);
    return v as boolean;
  };
  return {
    r,
    loraAlpha,
    rankPattern,
    alphaPattern,
    targetModules,
    useRslora: flag(c.use_rslora, 'use_rslora'),
    fanInFanOut: flag(c.fan_in_fan_out, 'fan_in_fan_out'),
    baseModelNameOrPath: typeof c.base_model_name_or_path === 'string' ? c.base_model_name_or_path : null,
  };
}

/** PEFT's get_pattern_key: the first pattern key matching the module name, if any. */
function patternFor(patterns: ReadonlyMap<string, number>, moduleName: string): number | undefined {
  for (const [k, v] of patterns) {
    if (k === moduleName || new RegExp(`^(.*\\.)?(${k})$`).test(moduleName)) return v;
  }
  return undefined;
}

/** Rank and scale PEFT uses for `moduleName` (e.g. "model.layers.0.self_attn.q_proj"). */
export function moduleScale(c: PeftLoraConfig, moduleName: string): { rank: number; scale: number } {
  const rank = patternFor(c.rankPattern, moduleName) ?? c.r;
  const alpha = patternFor(c.alphaPattern, moduleName) ?? c.loraAlpha;
  return { rank, scale: c.useRslora ? alpha / Math.sqrt(rank) : alpha / rank };
}
