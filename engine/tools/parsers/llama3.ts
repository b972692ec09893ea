/**
 * Llama 3.1 / 3.2 / 3.3 JSON tool calls (MindIE ToolsCallProcessorLlama), the form the Llama
 * 3.1 chat template asks for: the whole reply is a JSON object, optionally after
 * `<|python_tag|>`,
 *
 *     {"name": "get_weather", "parameters": {"city": "Paris"}}
 *
 * (`arguments` is accepted for `parameters`); parallel calls are objects separated by `;`.
 * A reply that does not start with such an object is plain content, verbatim.
 */
import { readJsonCall } from '../json-call.js';
import { ContentBuilder, skipWs } from '../scan.js';
import type { ParsedCall, ParsedOutput, ToolParserFamily } from '../types.js';

const PYTHON_TAG = '<|python_tag|>';

const HOLD: ParsedOutput = { content: '', calls: [] };

function parseLlama3(text: string, final: boolean): ParsedOutput {
  const plain: ParsedOutput = { content: text, calls: [] };
  let j = skipWs(text, 0);
  if (!final && PYTHON_TAG.startsWith(text.slice(j))) return HOLD;
  if (text.startsWith(PYTHON_TAG, j)) j = skipWs(text, j + PYTHON_TAG.length);
  if (j >= text.length) return final ? plain : HOLD;
  if (text[j] !== '{') return plain;
  const calls: ParsedCall[] = [];
  let at = j;
  for (;;) {
    const read = readJsonCall(text, at);
    if (read.call === null) {
      if (read.end === -1 && !final) return calls.length === 0 ? HOLD : { content: '', calls };
      if (calls.length === 0) return plain;
      return withRest(text.slice(at), calls, final);
    }
    calls.push(read.call);
    if (read.end < 0) return { content: '', calls };
    let k = skipWs(text, read.end);
    if (k >= text.length) return { content: '', calls };
    if (text[k] === ';') {
      const next = skipWs(text, k + 1);
      if (next >= text.length) return { content: '', calls };
      if (text[next] === '{') k = next;
    }
    if (text[k] !== '{') return withRest(text.slice(k), calls, final);
    at = k;
  }
}

function withRest(rest: string, calls: ParsedCall[], final: boolean): ParsedOutput {
  const content = new ContentBuilder();
  content.beforeCall('');
  content.tail(rest, final);
  return { content: content.toString(), calls };
}

export const llama3: ToolParserFamily = {
  name: 'llama3',
  aliases: ['llama3', 'llama', 'llama3_1'],
  models: 'Llama 3.1, 3.2, 3.3 (JSON tool calls)',
  parse: (text, final) => parseLlama3(text, final),
};
