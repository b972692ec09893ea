/**
 * One image and a question as a chat, for the vision-language generation tests: the engine
 * request and its finish event, transformers' run of the same (test/vision/generate_reference.py),
 * and how the engine's prompt scores compare with that reference's.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';
import type { EngineCore } from '../../engine/engine-core.js';
import type { EngineOptions } from '../../engine/options.js';
import type { FinishEvent, GenerateRequest, PromptTokenLogprob } from '../../engine/types.js';
import { pythonCommand } from '../fixtures.js';
import type { DrawnImage } from './drawn-images.js';

/** What the generation tests load their engines with: 1024 positions, a 32 MiB KV cache. */
export const ENGINE_OPTIONS: EngineOptions = { threads: 2, maxSeqLen: 1024, kvCacheBytes: 32 << 20 };

/** A user message of the image then `text`, decoded greedily with every prompt token's logprob. */
export function imageChatRequest(
  image: { readonly width: number; readonly height: number; readonly rgb: Uint8Array },
  text: string,
  maxNewTokens: number,
  ignoreEos = true,
): GenerateRequest {
  return {
    prompt: {
      kind: 'chat',
      messages: [
        {
          role: 'user',
          content: text,
          parts: [
            { type: 'image', image: 0 },
            { type: 'text', text },
          ],
        },
      ],
    },
    params: { temperature: 0, ignoreEos, maxNewTokens, promptLogprobs: 1 },
    images: [{ width: image.width, height: image.height, rgb: image.rgb, field: 'messages[0].content[0]' }],
  };
}

export async function finish(engine: EngineCore, request: GenerateRequest): Promise<FinishEvent> {
  let f: FinishEvent | undefined;
  for await (const e of engine.generate(request)) if (e.type === 'finish') f = e;
  assert.ok(f);
  return f;
}

/** generate_reference.py's answer: the prompt ids, its argmax and logprob at each position
 * (of the next token), and the greedy tokens. */
export interface GenerateReference {
  ids: number[];
  top1: number[];
  logprobs: number[];
  generated: number[];
}

/** transformers' run of `folder` on the image (its RGB written into `work`) and `text`, as a
 * chat (the template's) or as the text prompt itself; with `script` gemma3_reference.py, Gemma
 * 3's (form 'causal': without its bidirectional image mask). */
export function generateReference(
  folder: string,
  work: string,
  drawn: DrawnImage,
  rgb: Uint8Array,
  text: string,
  maxNewTokens: number,
  form: 'chat' | 'text' | 'causal',
  script: 'generate_reference.py' | 'gemma3_reference.py' = 'generate_reference.py',
): GenerateReference {
  const rgbPath = join(work, `${drawn.width}x${drawn.height}.rgb`);
  writeFileSync(rgbPath, rgb);
  const out = execFileSync(
    pythonCommand(),
    [
      join(projectRoot(), 'test', 'vision', script),
      folder,
      rgbPath,
      String(drawn.width),
      String(drawn.height),
      text,
      String(maxNewTokens),
      form,
    ],
    { encoding: 'utf8', env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' } },
  );
  return JSON.parse(out.trim().split('\n').at(-1)!) as GenerateReference;
}

/**
 * The engine's prompt logprobs against the reference's: `top1`, the share of positions whose
 * best token is the reference's argmax (position i predicts token i + 1: the reference's
 * entry i - 1), and `maxError`, the largest |logprob − reference logprob| over the tokens
 * after the first.
 */
export function promptAgreement(
  prompt: readonly PromptTokenLogprob[],
  ref: GenerateReference,
): { top1: number; maxError: number } {
  let agree = 0,
    maxError = 0;
  for (let i = 1; i < ref.ids.length; i++) {
    if (prompt[i]!.top[0]?.tokenId === ref.top1[i - 1]) agree++;
    maxError = Math.max(maxError, Math.abs(prompt[i]!.logprob! - ref.logprobs[i - 1]!));
  }
  return { top1: agree / (ref.ids.length - 1), maxError };
}

/** The largest |logprob| difference between two runs' prompt tokens after the first. */
export function maxLogprobDifference(
  a: readonly PromptTokenLogprob[],
  b: readonly PromptTokenLogprob[],
): number {
  let err = 0;
  for (let i = 1; i < a.length; i++) err = Math.max(err, Math.abs(b[i]!.logprob! - a[i]!.logprob!));
  return err;
}
