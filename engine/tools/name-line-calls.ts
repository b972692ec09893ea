/**
 * The loop of the ChatGLM families, whose calls have no start marker: a reply that is a call
 * begins with the function's name on a line of its own, then the arguments
 * (GLM-4: a JSON object; ChatGLM3: a fenced `tool_call(...)`). Further calls follow after the
 * `<|assistant|>` role token (visible when special tokens are not skipped).
 *
 * Without a marker, a first line is a call only when it names one of the request's tools
 * (any identifier when the request lists none): while the line could still become such a
 * name it is held back, so prose starts streaming at its first character that no tool
 * name has.
 */
import { ContentBuilder, skipWs } from './scan.js';
import type { ParseContext, ParsedCall, ParsedOutput } from './types.js';

export const ASSISTANT = '<|assistant|>';

export interface BodyRead {
  /** null: the text after the name line is not this family's arguments. */
  readonly args: string | null;
  /** End (exclusive) of the call; -1 while unfinished (or undecided, with args null). */
  readonly end: number;
}

function couldBeName(line: string, context: ParseContext, complete: boolean): boolean {
  if (context.toolNames.length === 0) return /^[A-Za-z_][\w.-]*$/.test(line) || (!complete && line === '');
  return context.toolNames.some((n) => (complete ? n === line : n.startsWith(line)));
}

export function parseNameLineCalls(
  text: string,
  final: boolean,
  context: ParseContext,
  readBody: (text: string, i: number, final: boolean) => BodyRead,
): ParsedOutput {
  const calls: ParsedCall[] = [];
  const content = new ContentBuilder();
  let at = 0;
  for (;;) {
    const lineStart = skipWs(text, at);
    const nl = text.indexOf('\n', lineStart);
    const line = text.slice(lineStart, nl < 0 ? text.length : nl).trim();
    const undecided = (): ParsedOutput => ({ content: content.toString(), calls });
    if (nl < 0 && !final && couldBeName(line, context, false)) return undecided();
    if (nl < 0 || !couldBeName(line, context, true)) break;
    const body = readBody(text, nl + 1, final);
    if (body.args === null) {
      if (body.end < 0 && !final) return undecided();
      break;
    }
    calls.push({ name: line, arguments: body.args });
    if (body.end < 0) return { content: content.toString(), calls };
    const next = skipWs(text, body.end);
    if (text.startsWith(ASSISTANT, next)) {
      at = next + ASSISTANT.length;
      continue;
    }
    if (!final && ASSISTANT.startsWith(text.slice(next))) return { content: content.toString(), calls };
    at = body.end;
    break;
  }
  if (calls.length === 0) return { content: text, calls };
  content.beforeCall('');
  content.tail(text.slice(at), final);
  return { content: content.toString(), calls };
}
