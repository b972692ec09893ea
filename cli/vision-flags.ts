/**
 * The image flag of `prism serve` and `prism engine`: llama.cpp's `--mmproj`, the image side
 * of a GGUF text model (engine/vision/load-image-encoder.ts checks the pair at load).
 */
export const visionFlagOptions = {
  mmproj: { type: 'string' },
} as const;

export const visionHelp = `  --mmproj PATH         the mmproj GGUF of a GGUF vision-language model, as llama.cpp's
                        converter writes it (SmolVLM); a Hugging Face folder carries its own`;

/** The flag's engine option, or throws `usage(message)` naming the flag and the rule. */
export function mmprojFromFlags(
  values: { mmproj?: string },
  usage: (message: string) => Error,
): { mmproj?: string } {
  if (values.mmproj === undefined) return {};
  if (values.mmproj === '') throw usage('--mmproj: must not be empty');
  return { mmproj: values.mmproj };
}
