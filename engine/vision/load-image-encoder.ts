/**
 * Which image encoder a loaded text model gets (engine/load-engine.ts): a vision-language
 * folder's own, or — llama.cpp's pairing, `llama-server -m model.gguf --mmproj mmproj.gguf` —
 * the mmproj GGUF named by `mmproj` beside a GGUF text model. The pair is checked at load, so
 * a wrong file is refused before anything is served, naming `mmproj` and the rule: the mmproj
 * must be one Prism runs (SmolVLM / Idefics3's, LLaVA-1.5's, Gemma 3's), its rows as wide as the text model's hidden
 * size, and the text model's vocabulary must hold every image token the processor writes.
 */
import { statSync } from 'node:fs';
import { isVisionModel, type VisionFamily } from '../../native/native.js';
import { invalidArgument } from '../errors.js';
import { NativeImageEncoder } from './native-image-encoder.js';

/** What of the loaded text model the pairing reads (native.ts ModelInfo). */
export interface TextModelFacts {
  /** The folder's own vision-language family; undefined for a GGUF or a text-only folder. */
  readonly vision?: VisionFamily;
  readonly hiddenSize: number;
}

export interface LoadedImageEncoder {
  readonly encoder: NativeImageEncoder;
  readonly vision: VisionFamily;
}

export async function loadImageEncoder(
  modelPath: string,
  model: TextModelFacts,
  options: { readonly mmproj?: string | undefined; readonly threads?: number | undefined },
): Promise<LoadedImageEncoder | undefined> {
  const { mmproj, threads } = options;
  const threadOption = threads !== undefined ? { threads } : {};
  if (mmproj === undefined) {
    if (!model.vision) return undefined;
    return { encoder: await NativeImageEncoder.load(modelPath, threadOption), vision: model.vision };
  }
  if (mmproj === '') throw invalidArgument('mmproj', 'must not be empty');
  if (model.vision)
    throw invalidArgument(
      'mmproj',
      `${modelPath} is a vision-language folder with its own image side; an mmproj file goes with a GGUF text model`,
    );
  if (!isFile(modelPath))
    throw invalidArgument('mmproj', `an mmproj file goes with a GGUF text model; ${modelPath} is a folder`);
  if (!isFile(mmproj)) throw invalidArgument('mmproj', `${mmproj} is not a file`);
  if (!isVisionModel(mmproj))
    throw invalidArgument(
      'mmproj',
      `${mmproj} is not an mmproj GGUF of a family Prism runs (general.architecture 'clip', ` +
        `clip.projector_type 'idefics3': SmolVLM, as convert_hf_to_gguf.py --mmproj writes it; ` +
        `'mlp': LLaVA-1.5, as llama.cpp's image-encoder converter writes it; or 'gemma3': Gemma 3, ` +
        `as convert_hf_to_gguf.py --mmproj writes it)`,
    );
  let encoder: NativeImageEncoder;
  try {
    encoder = await NativeImageEncoder.load(mmproj, { ...threadOption, textModel: modelPath });
  } catch (e) {
    throw invalidArgument('mmproj', e instanceof Error ? e.message : String(e));
  }
  const mismatch =
    encoder.hidden !== model.hiddenSize
      ? `${mmproj} gives image rows of ${encoder.hidden} values and the text model's hidden size is ` +
        `${model.hiddenSize}: they are not a pair`
      : missingTokensRule(encoder.missingTokens(), modelPath);
  if (mismatch) {
    encoder.dispose();
    throw invalidArgument('mmproj', mismatch);
  }
  return { encoder, vision: encoder.family };
}

function missingTokensRule(missing: readonly string[], modelPath: string): string | undefined {
  if (missing.length === 0) return undefined;
  const shown =
    missing.slice(0, 3).join(', ') + (missing.length > 3 ? `, and ${missing.length - 3} more` : '');
  return `the text model ${modelPath} has no token for ${shown}: it is not this mmproj's text model`;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
