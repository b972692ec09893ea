/**
 * GLM-4-9B-Chat (MindIE ToolsCallProcessorChatglmV4): the reply of a call is the function
 * name on its own line, then the arguments as a JSON object,
 *
 *     get_weather
 *     {"city": "Paris"}
 *
 * as glm-4-9b-chat's own `process_response` reads it.
 */
import { parseNameLineCalls, type BodyRead } from '../name-line-calls.js';
import { argumentsText, jsonValueEnd, skipWs } from '../scan.js';
import type { ToolParserFamily } from '../types.js';

function readBody(text: string, i: number): BodyRead {
  const j = skipWs(text, i);
  if (j >= text.length) return { args: null, end: -1 };
  if (text[j] !== '{') return { args: null, end: j };
  const end = jsonValueEnd(text, j);
  return { args: argumentsText(text, j, end) ?? '', end };
}

export const glm4: ToolParserFamily = {
  name: 'glm_4',
  aliases: ['glm_4', 'chatglm4_9b', 'chatglm_v4_9b', 'glm_4_9b'],
  models: 'GLM-4-9B-Chat',
  parse: (text, final, context) => parseNameLineCalls(text, final, context, readBody),
};
