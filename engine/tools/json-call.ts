/**
 * A call written as one JSON object with a name and an arguments object
 * (`{"name": "f", "arguments": {...}}`: hermes, Llama 3 — which says `parameters`), read from
 * a possibly unfinished text.
 */
import { argumentsText, decodeString, scanObject } from './scan.js';
import type { ParsedCall } from './types.js';

export interface JsonCallRead {
  readonly call: ParsedCall | null;
  /** End (exclusive) of the object; -1 while unfinished; -2 when the text there is not a JSON object. */
  readonly end: number;
}

const ARGUMENT_KEYS = ['arguments', 'parameters'];

export function readJsonCall(text: string, i: number): JsonCallRead {
  const scan = scanObject(text, i);
  if (scan.end === -2 && scan.fields.length === 0) return { call: null, end: -2 };
  const nameField = scan.fields.find((f) => f.key === 'name' && f.valueEnd >= 0);
  const name = nameField ? decodeString(text.slice(nameField.valueStart, nameField.valueEnd)) : null;
  if (name === null) return { call: null, end: scan.end };
  const argsField = scan.fields.find((f) => ARGUMENT_KEYS.includes(f.key));
  let args: string;
  if (argsField) args = argumentsText(text, argsField.valueStart, argsField.valueEnd) ?? '';
  // A tool without parameters: "{}", never a missing arguments string (vllm#28806).
  else args = scan.end === -1 ? '' : '{}';
  return { call: { name, arguments: args }, end: scan.end };
}
