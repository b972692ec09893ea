/**
 * The loop shared by the families whose calls open with a marker (hermes `<tool_call>`,
 * DeepSeek `<｜tool▁call▁begin｜>`, Qwen-Agent `✿FUNCTION✿`): text between calls is content,
 * each call body is read by the family's own `readCall`. A block that ends without a
 * readable name is not a call and goes to content as the model wrote it.
 */
import { ContentBuilder, heldMarkerTail } from './scan.js';
import type { ParsedCall, ParsedOutput } from './types.js';

export interface CallRead {
  /** The call, once its name is known (its arguments as far as they are certain). */
  readonly call: ParsedCall | null;
  /** End (exclusive) of the whole block, end marker included; -1 while unfinished. */
  readonly end: number;
}

export interface MarkerFormat {
  /** Markers that open one call. */
  readonly starts: readonly string[];
  /** Markers that wrap a group of calls and carry nothing themselves: dropped from content. */
  readonly silent?: readonly string[];
  /** Reads the call whose start marker ends at `i`. */
  readCall(text: string, i: number, final: boolean): CallRead;
}

function firstOf(
  text: string,
  markers: readonly string[],
  from: number,
): { at: number; marker: string } | null {
  let best: { at: number; marker: string } | null = null;
  for (const marker of markers) {
    const at = text.indexOf(marker, from);
    if (at >= 0 && (best === null || at < best.at)) best = { at, marker };
  }
  return best;
}

function withoutSilent(text: string, silent: readonly string[]): string {
  let out = text;
  for (const s of silent) out = out.split(s).join('');
  return out;
}

export function parseMarkerCalls(text: string, final: boolean, format: MarkerFormat): ParsedOutput {
  const silent = format.silent ?? [];
  const content = new ContentBuilder();
  const calls: ParsedCall[] = [];
  let i = 0;
  for (;;) {
    const start = firstOf(text, format.starts, i);
    if (start === null) {
      // Silent markers out first: a complete one must not be mistaken for the start of another.
      let tail = withoutSilent(text.slice(i), silent);
      if (!final) tail = tail.slice(0, tail.length - heldMarkerTail(tail, [...format.starts, ...silent]));
      content.tail(tail, final);
      break;
    }
    const before = withoutSilent(text.slice(i, start.at), silent);
    const read = format.readCall(text, start.at + start.marker.length, final);
    if (read.call === null && (read.end >= 0 || final)) {
      // Not a call after all: the block is content, verbatim.
      const blockEnd = read.end >= 0 ? read.end : text.length;
      content.tail(before + text.slice(start.at, blockEnd), true);
      if (read.end < 0) break;
      i = blockEnd;
      continue;
    }
    content.beforeCall(before);
    if (read.call !== null) calls.push(read.call);
    if (read.end < 0) break;
    i = read.end;
  }
  return { content: content.toString(), calls };
}
