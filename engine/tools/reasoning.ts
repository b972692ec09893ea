/**
 * Reasoning output of `<think>…</think>` models (Qwen3, DeepSeek-R1 and R1-0528, QwQ): the
 * text inside the think block is `reasoning_content`, the rest is the answer (and may hold
 * tool calls, which are parsed from the answer only — a call the model writes while thinking
 * is thought, not a call).
 *
 * Whether the block is already open when generation starts is read from the prompt: a
 * template that ends the generation prompt with `<think>` (DeepSeek-R1, Qwen3 with some
 * templates) makes the model start inside it, so its output has no opening tag; otherwise the
 * output opens the block itself or has none. Like the tool parsers, `splitReasoning` on a
 * streamed prefix only ever under-states (a possible partial tag is held back).
 */
import { heldMarkerTail, skipWs } from './scan.js';

const THINK_START = '<think>';
export const THINK_END = '</think>';

export interface ReasoningSplit {
  readonly reasoning: string;
  /** The answer after the think block (leading whitespace dropped). */
  readonly rest: string;
  /** A think block was found (or the prompt opened one). */
  readonly opened: boolean;
  /** No think block is open any more: the answer part is being written (or there is no block). */
  readonly closed: boolean;
}

const UNDECIDED: ReasoningSplit = { reasoning: '', rest: '', opened: false, closed: false };

export function splitReasoning(text: string, final: boolean, startsInReasoning: boolean): ReasoningSplit {
  const j = skipWs(text, 0);
  const head = text.slice(j);
  let p = 0;
  if (head.startsWith(THINK_START)) p = j + THINK_START.length;
  else if (!final && THINK_START.startsWith(head))
    return startsInReasoning ? { ...UNDECIDED, opened: true } : UNDECIDED;
  else if (!startsInReasoning) return { reasoning: '', rest: text, opened: false, closed: true };
  const end = text.indexOf(THINK_END, p);
  if (end < 0) {
    const reasoning = final
      ? text.slice(p)
      : text.slice(p, text.length - heldMarkerTail(text.slice(p), [THINK_END]));
    return { reasoning, rest: '', opened: true, closed: final };
  }
  return {
    reasoning: text.slice(p, end),
    rest: text.slice(end + THINK_END.length).trimStart(),
    opened: true,
    closed: true,
  };
}

/** The reasoning parser applies to models whose template knows the think block. */
export function templateHasReasoning(template: string | null): boolean {
  return template !== null && template.includes(THINK_END);
}

/** The rendered prompt leaves the model inside an open think block. */
export function promptOpensReasoning(prompt: string): boolean {
  return prompt.trimEnd().endsWith(THINK_START);
}
