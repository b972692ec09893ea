/**
 * What DeepSeek V3-0324 / R1-0528 and V3.1 share: the special-token markers of the calls
 * section and the reading of a call's arguments, a JSON object after the name (V3 wraps it
 * in a ```json fence). Markers use U+FF5C (fullwidth vertical line) and U+2581 (lower block),
 * exactly as in the models' tokenizers.
 */
import { argumentsText, jsonValueEnd, skipWs } from '../scan.js';
import type { CallRead } from '../marker-calls.js';

export const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
export const CALLS_END = '<｜tool▁calls▁end｜>';
export const CALL_BEGIN = '<｜tool▁call▁begin｜>';
export const CALL_END = '<｜tool▁call▁end｜>';
export const SEP = '<｜tool▁sep｜>';

const FENCE = '```json';

/** Reads the arguments starting at `i` (after the name) up to and including CALL_END. */
export function readDeepseekArguments(text: string, i: number, name: string, final: boolean): CallRead {
  let j = skipWs(text, i);
  if (text.startsWith(FENCE, j)) j = skipWs(text, j + FENCE.length);
  else if (j >= text.length || (FENCE.startsWith(text.slice(j)) && !final))
    return { call: { name, arguments: '' }, end: -1 };
  const closeAt = (from: number): number => {
    const at = text.indexOf(CALL_END, from);
    return at < 0 ? -1 : at + CALL_END.length;
  };
  if (text[j] === '{') {
    const valueEnd = jsonValueEnd(text, j);
    const args = argumentsText(text, j, valueEnd < 0 ? -1 : valueEnd) ?? '';
    return { call: { name, arguments: args }, end: valueEnd < 0 ? -1 : closeAt(valueEnd) };
  }
  // Not an object: the text up to the end marker (fence and whitespace trimmed), once complete.
  const end = closeAt(j);
  if (end < 0)
    return { call: { name, arguments: final ? text.slice(j).replace(/\s*(```)?\s*$/, '') : '' }, end };
  const raw = text.slice(j, end - CALL_END.length).replace(/\s*(```)?\s*$/, '');
  return { call: { name, arguments: raw === '' ? '{}' : raw }, end };
}
