/**
 * Qwen1.5 and Qwen2 (MindIE ToolsCallProcessorQwen1_5_or_2): the Qwen-Agent function format,
 *
 *     ✿FUNCTION✿: get_weather
 *     ✿ARGS✿: {"city": "Paris"}
 *     ✿RESULT✿
 *
 * (the model stops at ✿RESULT✿, where the tool's result goes). Text before ✿FUNCTION✿ is
 * content; several ✿FUNCTION✿/✿ARGS✿ pairs are parallel calls.
 */
import { parseMarkerCalls, type CallRead } from '../marker-calls.js';
import { argumentsText, jsonValueEnd, skipWs } from '../scan.js';
import type { ToolParserFamily } from '../types.js';

const FN_NAME = '✿FUNCTION✿';
const FN_ARGS = '✿ARGS✿';
const FN_RESULT = '✿RESULT✿';
const FN_EXIT = '✿RETURN✿';

function skipColon(text: string, i: number): number {
  let j = skipWs(text, i);
  if (text[j] === ':' || text[j] === '：') j = skipWs(text, j + 1);
  return j;
}

function readCall(text: string, i: number, final: boolean): CallRead {
  const nameStart = skipColon(text, i);
  let nameEnd = nameStart;
  while (nameEnd < text.length && text[nameEnd] !== '\n' && text[nameEnd] !== '✿') nameEnd++;
  if (nameEnd >= text.length) return { call: null, end: -1 };
  const name = text.slice(nameStart, nameEnd).trim();
  const argsMarker = skipWs(text, nameEnd);
  const rest = text.slice(argsMarker, argsMarker + FN_ARGS.length);
  if (name === '' || (!text.startsWith(FN_ARGS, argsMarker) && !(FN_ARGS.startsWith(rest) && !final))) {
    // No ✿ARGS✿ after the name: not a call (the block is content up to here).
    return { call: null, end: name === '' ? nameEnd : argsMarker };
  }
  if (!text.startsWith(FN_ARGS, argsMarker)) return { call: null, end: -1 };
  const j = skipColon(text, argsMarker + FN_ARGS.length);
  if (j >= text.length) return { call: { name, arguments: final ? '{}' : '' }, end: -1 };
  if (text[j] === '{') {
    const end = jsonValueEnd(text, j);
    return { call: { name, arguments: argumentsText(text, j, end) ?? '' }, end };
  }
  // Not an object: up to the next ✿ marker, once it is there.
  const next = text.indexOf('✿', j);
  if (next < 0) return { call: { name, arguments: final ? text.slice(j).trim() : '' }, end: -1 };
  return { call: { name, arguments: text.slice(j, next).trim() }, end: next };
}

export const qwen1_5: ToolParserFamily = {
  name: 'qwen1_5_or_2',
  aliases: ['qwen1_5_or_2', 'qwen1_5', 'qwen_1_5', 'qwen2', 'qwen_2', 'qwen_1_5_or_2'],
  models: 'Qwen1.5-Chat, Qwen2-Instruct (Qwen-Agent function format)',
  parse: (text, final) =>
    parseMarkerCalls(text, final, { starts: [FN_NAME], silent: [FN_RESULT, FN_EXIT], readCall }),
};
