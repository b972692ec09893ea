/**
 * Small scanners the parser families share: where a JSON value ends (or that it has not
 * ended yet), the top-level fields of a possibly unfinished JSON object, how much of a text's
 * tail could still grow into a marker, and the content-whitespace rule. They never throw and
 * never look past the text they are given, so a streamed prefix is always safe to scan.
 */

/** Length of the longest tail of `text` that is a proper prefix of one of `markers` (text to hold back). */
export function heldMarkerTail(text: string, markers: readonly string[]): number {
  let held = 0;
  for (const m of markers) {
    for (let n = Math.min(m.length - 1, text.length); n > held; n--) {
      if (text.endsWith(m.slice(0, n))) {
        held = n;
        break;
      }
    }
  }
  return held;
}

export function skipWs(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i])) i++;
  return i;
}

const INCOMPLETE = -1;
const INVALID = -2;

/**
 * End (exclusive) of the JSON value that starts at `i`: -1 when the text stops inside it
 * (it may still be completed), -2 when no JSON value starts there. A bare number or literal
 * is complete only once a character after it is seen.
 */
export function jsonValueEnd(text: string, i: number): number {
  const c = text[i];
  if (c === undefined) return INCOMPLETE;
  if (c === '"') return stringEnd(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') {
        const e = stringEnd(text, j);
        if (e < 0) return e;
        j = e - 1;
      } else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return INCOMPLETE;
  }
  if (/[-0-9tfn]/.test(c)) {
    let j = i;
    while (j < text.length && /[-+0-9.eEtruefalsn]/.test(text[j])) j++;
    return j < text.length ? j : INCOMPLETE;
  }
  return INVALID;
}

/** End (exclusive) of the JSON string whose opening quote is at `i`, or -1 when unfinished. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '"') return j + 1;
  }
  return INCOMPLETE;
}

interface JsonField {
  readonly key: string;
  readonly valueStart: number;
  /** -1 while the value is unfinished. */
  readonly valueEnd: number;
}

export interface JsonObjectScan {
  readonly fields: readonly JsonField[];
  /** End (exclusive) of the object: -1 while unfinished, -2 when the text is not a JSON object. */
  readonly end: number;
}

/** The top-level fields of the JSON object starting at `i` (text[i] is '{'), as far as the text goes. */
export function scanObject(text: string, i: number): JsonObjectScan {
  const fields: JsonField[] = [];
  if (text[i] !== '{') return { fields, end: INVALID };
  let j = skipWs(text, i + 1);
  if (text[j] === '}') return { fields, end: j + 1 };
  for (;;) {
    if (j >= text.length) return { fields, end: INCOMPLETE };
    if (text[j] !== '"') return { fields, end: INVALID };
    const keyEnd = stringEnd(text, j);
    if (keyEnd < 0) return { fields, end: INCOMPLETE };
    const key = decodeString(text.slice(j, keyEnd));
    if (key === null) return { fields, end: INVALID };
    j = skipWs(text, keyEnd);
    if (j >= text.length) return { fields, end: INCOMPLETE };
    if (text[j] !== ':') return { fields, end: INVALID };
    const valueStart = skipWs(text, j + 1);
    if (valueStart >= text.length) return { fields, end: INCOMPLETE };
    const valueEnd = jsonValueEnd(text, valueStart);
    if (valueEnd === INVALID) return { fields, end: INVALID };
    fields.push({ key, valueStart, valueEnd });
    if (valueEnd === INCOMPLETE) return { fields, end: INCOMPLETE };
    j = skipWs(text, valueEnd);
    if (j >= text.length) return { fields, end: INCOMPLETE };
    if (text[j] === '}') return { fields, end: j + 1 };
    if (text[j] !== ',') return { fields, end: INVALID };
    j = skipWs(text, j + 1);
  }
}

export function decodeString(jsonText: string): string | null {
  try {
    const v: unknown = JSON.parse(jsonText);
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * The arguments of a call whose JSON value spans [start, end) of `text` (end -1: unfinished):
 * an object's own text, streamed as it grows; a string holding JSON (some models quote the
 * arguments) only once complete, decoded; anything else once complete, as its text.
 * Returns null while nothing of it can be stated yet.
 */
export function argumentsText(text: string, start: number, end: number): string | null {
  if (text[start] === '{') return end < 0 ? text.slice(start) : text.slice(start, end);
  if (end < 0) return null;
  const raw = text.slice(start, end);
  if (text[start] === '"') return decodeString(raw) ?? raw;
  return raw;
}

/**
 * Content is the text outside calls. Whitespace that only separates content from a call is
 * not content; when no call follows (yet), trailing whitespace is held back in a streamed
 * prefix, because a call may still follow it. A text without calls is returned verbatim.
 */
export class ContentBuilder {
  private readonly parts: string[] = [];
  private afterCall = false;

  /** A stretch of content that a call follows. */
  beforeCall(text: string): void {
    this.parts.push((this.afterCall ? text.trimStart() : text).trimEnd());
    this.afterCall = true;
  }

  /** The last stretch (no call after it, or not yet). */
  tail(text: string, final: boolean): void {
    let t = this.afterCall ? text.trimStart() : text;
    if (!final) t = t.trimEnd();
    this.parts.push(t);
  }

  toString(): string {
    return this.parts.join('');
  }
}
