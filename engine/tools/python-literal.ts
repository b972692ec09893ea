/**
 * ChatGLM3 writes a call's arguments as Python keyword arguments
 * (`tool_call(city='Paris', days=3)`). This reads them — Python literals only: strings
 * (single, double or triple quoted, with escapes), numbers, True/False/None, lists, tuples,
 * dicts — into a plain object, as `ast.literal_eval` would; anything else is refused (null).
 * Never `eval`.
 */

/** End (exclusive) of the call expression whose '(' is at `open`, or -1 while it is unfinished. */
export function callExpressionEnd(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'") {
      const end = pyStringEnd(text, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function pyStringEnd(text: string, i: number): number {
  const q = text[i];
  const triple = text.startsWith(q.repeat(3), i);
  const close = triple ? q.repeat(3) : q;
  for (let j = i + close.length; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text.startsWith(close, j)) return j + close.length;
  }
  return -1;
}

class Reader {
  i = 0;
  constructor(readonly s: string) {}
  ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i])) this.i++;
  }
  peek(): string {
    this.ws();
    return this.s[this.i] ?? '';
  }
  eat(c: string): boolean {
    if (this.peek() !== c) return false;
    this.i++;
    return true;
  }
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '0': '\0',
};

function readString(r: Reader): string {
  const start = r.i;
  const end = pyStringEnd(r.s, start);
  if (end < 0) throw new Error('unterminated string');
  const q = r.s[start];
  const quote = r.s.startsWith(q.repeat(3), start) ? 3 : 1;
  const body = r.s.slice(start + quote, end - quote);
  r.i = end;
  let out = '';
  for (let k = 0; k < body.length; k++) {
    if (body[k] !== '\\') {
      out += body[k];
      continue;
    }
    const e = body[++k];
    if (e === 'u' || e === 'x') {
      const n = e === 'u' ? 4 : 2;
      const hex = body.slice(k + 1, k + 1 + n);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) throw new Error('bad escape');
      out += String.fromCharCode(parseInt(hex, 16));
      k += n;
    } else out += ESCAPES[e] ?? '\\' + e;
  }
  return out;
}

function readValue(r: Reader): unknown {
  const c = r.peek();
  if (c === "'" || c === '"') return readString(r);
  if (c === '[' || c === '(') {
    const close = c === '[' ? ']' : ')';
    r.i++;
    const list: unknown[] = [];
    while (!r.eat(close)) {
      list.push(readValue(r));
      if (!r.eat(',') && r.peek() !== close) throw new Error('expected ,');
    }
    return list;
  }
  if (c === '{') {
    r.i++;
    const obj: Record<string, unknown> = {};
    while (!r.eat('}')) {
      const key = readValue(r);
      if (!r.eat(':')) throw new Error('expected :');
      obj[String(key)] = readValue(r);
      if (!r.eat(',') && r.peek() !== '}') throw new Error('expected ,');
    }
    return obj;
  }
  const m = /^(-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|True|False|None)/.exec(r.s.slice(r.i));
  if (!m) throw new Error('not a literal');
  r.i += m[0].length;
  if (m[0] === 'True') return true;
  if (m[0] === 'False') return false;
  if (m[0] === 'None') return null;
  return Number(m[0]);
}

/** `(a=1, b='x')` — the parenthesised keyword arguments of a call — as an object, or null. */
export function parsePythonKwargs(args: string): Record<string, unknown> | null {
  const r = new Reader(args);
  try {
    if (!r.eat('(')) return null;
    const out: Record<string, unknown> = {};
    while (!r.eat(')')) {
      r.ws();
      const name = /^[A-Za-z_]\w*/.exec(r.s.slice(r.i));
      if (!name) return null;
      r.i += name[0].length;
      if (!r.eat('=')) return null;
      out[name[0]] = readValue(r);
      if (!r.eat(',') && r.peek() !== ')') return null;
    }
    r.ws();
    return r.i === r.s.length ? out : null;
  } catch {
    return null;
  }
}

/** JSON text as Python's `json.dumps(value, ensure_ascii=False)` writes it (", " and ": "), as MindIE returns ChatGLM3 arguments. */
export function pythonStyleJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonStyleJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonStyleJson(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}
