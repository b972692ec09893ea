/**
 * What the end-to-end speculation tests (draft model, layer skipping) share: the 52 prompts
 * their greedy-equality checks run — four shapes (chat, story, list, repeat) of 13 subjects,
 * so drafts are both accepted (repeats) and refused (open text) — and a helper that runs a
 * request to its finish event.
 */
import type { Engine, FinishEvent, GenerateRequest } from '../engine/types.js';

const SUBJECTS = [
  'the old lighthouse',
  'a baker in a village',
  'Mount Everest',
  'the annual budget',
  'photosynthesis',
  'a long trip north',
  'a flooded river',
  'a web server',
  'a quiet farm',
  'a museum',
  'the train to Lyon',
  'a dragon',
  'winter',
];

export const SPECULATION_PROMPTS: readonly string[] = SUBJECTS.flatMap((s) => [
  `<|im_start|>user\nTell me about ${s}.<|im_end|>\n<|im_start|>assistant\n`,
  `Once upon a time, ${s}`,
  `Three facts about ${s}:\n1.`,
  `Say "${s} is here" twice: ${s} is here, ${s}`,
]);

/** Runs the request and returns its finish event. */
export async function finish(e: Engine, r: GenerateRequest): Promise<FinishEvent> {
  let f: FinishEvent | undefined;
  for await (const ev of e.generate(r)) if (ev.type === 'finish') f = ev;
  return f!;
}
