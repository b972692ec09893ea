/**
 * DeepSeek V3-0324 and R1-0528 (MindIE ToolsCallProcessorDeepseekv3; its chat template writes
 * calls back the same way):
 *
 *     <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
 *     ```json
 *     {"city": "Paris"}
 *     ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
 *
 * parallel calls are consecutive `<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>` blocks.
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
  const end = text.indexOf(CALL_END, i);
  const notACall = { call: null, end: end < 0 ? -1 : end + CALL_END.length };
  const sep = text.indexOf(SEP, i);
  if (sep < 0 || (end >= 0 && end < sep)) return notACall;
  const nameStart = sep + SEP.length;
  const nl = text.indexOf('\n', nameStart);
  if (nl < 0 || (end >= 0 && end < nl)) return notACall;
  const name = text.slice(nameStart, nl).trim();
  if (name === '') return notACall;
  return readDeepseekArguments(text, nl + 1, name, final);
}

export const deepseekV3: ToolParserFamily = {
  name: 'deepseek_v3',
  aliases: ['deepseek_v3', 'deepseek_v2', 'deepseekv2', 'deepseekv3'],
  models: 'DeepSeek-V3-0324, DeepSeek-R1-0528 (DeepSeek-V2/V3 architectures)',
  parse: (text, final) =>
    parseMarkerCalls(text, final, { starts: [CALL_BEGIN], silent: [CALLS_BEGIN, CALLS_END], readCall }),
};
