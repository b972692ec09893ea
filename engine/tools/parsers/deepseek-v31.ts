/**
 * DeepSeek V3.1 (MindIE ToolsCallProcessorDeepseekv31; only when configured by name, since
 * V3.1 shares its architecture with V3):
 *
 *     <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
 *
 * The name comes before the separator and there is no type nor fence.
 */
import { parseMarkerCalls, type CallRead } from '../marker-calls.js';
import type { ToolParserFamily } from '../types.js';
import {
  CALL_BEGIN,
  CALL_END,
  CALLS_BEGIN,
  CALLS_END,
  readDeepseekArguments,
  SEP,
} from './deepseek-common.js';

function readCall(text: string, i: number, final: boolean): CallRead {
  const sep = text.indexOf(SEP, i);
  const end = text.indexOf(CALL_END, i);
  if (sep < 0 || (end >= 0 && end < sep)) {
    return { call: null, end: end < 0 ? -1 : end + CALL_END.length };
  }
  const name = text.slice(i, sep).trim();
  if (name === '') return { call: null, end: end < 0 ? -1 : end + CALL_END.length };
  return readDeepseekArguments(text, sep + SEP.length, name, final);
}

export const deepseekV31: ToolParserFamily = {
  name: 'deepseek_v31',
  aliases: ['deepseek_v31', 'deepseekv31'],
  models: 'DeepSeek-V3.1 (set tool_call_parser explicitly)',
  parse: (text, final) =>
    parseMarkerCalls(text, final, { starts: [CALL_BEGIN], silent: [CALLS_BEGIN, CALLS_END], readCall }),
};
