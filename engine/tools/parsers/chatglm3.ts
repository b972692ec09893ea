/**
 * ChatGLM3-6B (MindIE ToolsCallProcessorChatglmV3): the reply of a call is the function name
 * on its own line, then a fenced Python call with keyword arguments,
 *
 *     get_weather
 *     ```python
 *     tool_call(city='Paris', days=3)
 *     ```
 *
 * as ChatGLM3's `process_response` reads it. The keyword arguments become a JSON object
 * (python-literal.ts), sent whole once the call is complete.
 */
import { parseNameLineCalls, type BodyRead } from '../name-line-calls.js';
import { callExpressionEnd, parsePythonKwargs, pythonStyleJson } from '../python-literal.js';
import { skipWs } from '../scan.js';
import type { ToolParserFamily } from '../types.js';

const OPEN = '```python';
const CALL = 'tool_call';
const CLOSE = '```';

function readBody(text: string, i: number, final: boolean): BodyRead {
  let j = skipWs(text, i);
  const undecided = (): BodyRead => ({ args: null, end: final ? j : -1 });
  if (j >= text.length || (OPEN.startsWith(text.slice(j)) && !final)) return undecided();
  if (!text.startsWith(OPEN, j)) return { args: null, end: j };
  j = skipWs(text, j + OPEN.length);
  if (j >= text.length || (CALL.startsWith(text.slice(j)) && !final)) return undecided();
  if (!text.startsWith(CALL, j)) return { args: null, end: j };
  const open = skipWs(text, j + CALL.length);
  if (open >= text.length) return undecided();
  if (text[open] !== '(') return { args: null, end: open };
  const close = callExpressionEnd(text, open);
  if (close < 0) return undecided();
  const kwargs = parsePythonKwargs(text.slice(open, close));
  if (kwargs === null) return { args: null, end: close };
  let end = skipWs(text, close);
  if (text.startsWith(CLOSE, end)) end += CLOSE.length;
  else if (!final && CLOSE.startsWith(text.slice(end))) return { args: pythonStyleJson(kwargs), end: -1 };
  else end = close;
  return { args: pythonStyleJson(kwargs), end };
}

export const chatglm3: ToolParserFamily = {
  name: 'chatglm3',
  aliases: ['chatglm3', 'chatglm3_6b', 'chatglm_v3_6b', 'chatglm_v3'],
  models: 'ChatGLM3-6B',
  parse: (text, final, context) => parseNameLineCalls(text, final, context, readBody),
};
