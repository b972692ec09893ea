/** `--max-model-len N` of `prism serve` and `prism engine`: caps the model's context (vLLM's flag). */
export const contextFlagOption = { 'max-model-len': { type: 'string' } } as const;

export const contextHelp = `  --max-model-len N     longest sequence (prompt + output) served, at most the model's own
                        context length, which is the default without a config file (a config
                        file's maxSeqLen / maxInputTokenLen / maxIterTimes set the limits instead)`;

/** The engine option of the flag; `usage` makes the CLI's usage error. */
export function maxModelLenFromFlags(
  values: { 'max-model-len'?: string },
  configured: { readonly maxSeqLen?: number },
  usage: (message: string) => Error,
): { maxModelLen?: number } {
  const v = values['max-model-len'];
  if (v === undefined) return {};
  if (!/^\d+$/.test(v) || Number(v) < 2) throw usage(`--max-model-len: must be an integer >= 2, got '${v}'`);
  if (configured.maxSeqLen !== undefined)
    throw usage('--max-model-len: the config file sets maxSeqLen; set the limit there');
  return { maxModelLen: Number(v) };
}
