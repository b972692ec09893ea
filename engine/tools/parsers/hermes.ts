/**
 * Hermes-style calls, as Qwen2.5 and Qwen3 (and NousResearch Hermes) write them and as their
 * chat templates teach them:
 *
 *     <tool_call>
 *     {"name": "get_weather", "arguments": {"city": "Paris"}}
 *     </tool_call>
 *
 * one block per call, parallel calls as consecutive blocks; text outside blocks is content.
 */
import { readJsonCall } from '../json-call.js';
import { parseMarkerCalls, type CallRead } from '../marker-calls.js';
import { skipWs } from '../scan.js';
import type { ParsedOutput } from '../types.js';

const HERMES_START = '<tool_call>';
const HERMES_END = '</tool_call>';

function readCall(text: string, i: number): CallRead {
  const j = skipWs(text, i);
  const closeAfter = (from: number): number => {
    const at = text.indexOf(HERMES_END, from);
    return at < 0 ? -1 : at + HERMES_END.length;
  };
  if (j >= text.length) return { call: null, end: -1 };
  const read = readJsonCall(text, j);
  if (read.end === -1) return { call: read.call, end: -1 };
  // Complete object (or not JSON at all): the block runs to the end marker.
  return { call: read.call, end: closeAfter(read.end >= 0 ? read.end : j) };
}

export function parseHermes(text: string, final: boolean): ParsedOutput {
  return parseMarkerCalls(text, final, { starts: [HERMES_START], readCall });
}
