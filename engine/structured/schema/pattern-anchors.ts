/**
 * Anchors (`^`, `$`) inside a schema's `pattern`, and whether the grammar honours them.
 *
 * A JSON Schema pattern is an ECMAScript regular expression that may match anywhere in the
 * string; `^` and `$` are assertions (start and end of the string — there is no multiline
 * flag). xgrammar 0.2.8 instead compiles a pattern as a match of the whole string and ignores
 * every anchor, with only a warning when it is not at either end (xgrammar-workarounds.ts:
 * pattern-inner-anchor): `/^[0-9]{4}$/` — a JavaScript literal pasted with its slashes —
 * takes `"/1234/"`, which the pattern (a `/` before the start of the string) never matches.
 *
 * The grammar's whole-string match is still exact where every `^` can only be reached at the
 * start of the string and every `$` only at its end: each `^` has nothing but `^` before it
 * in its alternative, inside groups that are themselves so placed and not repeated (and the
 * same for `$` towards the end). Then every string the grammar writes is one match of the
 * pattern, anchors included. Anything else is `inexact` (check.ts: refused under
 * `grammarOnly`, otherwise the pattern is left to the document check); a pattern each of
 * whose alternatives needs a character before a `^` or after a `$` matches no string at all
 * (`nothing`: empty-values.ts refuses it in every mode).
 */

export type AnchorPlacement = 'exact' | 'inexact' | 'nothing';

interface Item {
  readonly kind: 'char' | 'start' | 'end' | 'group' | 'zero';
  readonly alt?: Alt;
  min: number;
  max: number;
}
type Alt = Item[][];

/** Where `pattern`'s anchors stand (see above); `exact` for a pattern without anchors. */
export function anchorPlacement(pattern: string): AnchorPlacement {
  if (!/[$^]/.test(pattern)) return 'exact';
  let alt: Alt;
  try {
    alt = new Parser(pattern).parse();
  } catch {
    // Not a pattern this parser understands: the grammar library decides (it refuses to
    // compile what it cannot parse); nothing is claimed here.
    return 'exact';
  }
  if (alt.every(deadSequence)) return 'nothing';
  return placedExactly(alt, true, true) ? 'exact' : 'inexact';
}

/** Every anchor of `alt` sits at the start (`^`) or end (`$`) of any match it is part of. */
function placedExactly(alt: Alt, atStart: boolean, atEnd: boolean): boolean {
  return alt.every((seq) =>
    seq.every((item, i) => {
      const once = item.max <= 1;
      const startHere = atStart && once && seq.slice(0, i).every((x) => x.kind === 'start');
      const endHere = atEnd && once && seq.slice(i + 1).every((x) => x.kind === 'end');
      if (item.kind === 'start') return startHere;
      if (item.kind === 'end') return endHere;
      if (item.kind === 'group') return placedExactly(item.alt!, startHere, endHere);
      return true;
    }),
  );
}

/** A sequence that needs a character before one of its `^` or after one of its `$`. */
function deadSequence(seq: Item[]): boolean {
  const consumes = (x: Item) => x.kind === 'char' && x.min >= 1;
  return seq.some(
    (item, i) =>
      (item.kind === 'start' && seq.slice(0, i).some(consumes)) ||
      (item.kind === 'end' && seq.slice(i + 1).some(consumes)),
  );
}

/** A recursive-descent reading of the ECMAScript pattern syntax, as far as anchors need it. */
class Parser {
  private i = 0;
  constructor(private readonly p: string) {}

  parse(): Alt {
    const alt = this.alternation();
    if (this.i !== this.p.length) throw new Error('unbalanced )');
    return alt;
  }

  private alternation(): Alt {
    const alt: Alt = [[]];
    while (this.i < this.p.length) {
      const c = this.p[this.i]!;
      if (c === ')') break;
      if (c === '|') {
        this.i++;
        alt.push([]);
        continue;
      }
      const item = this.atom();
      this.quantifier(item);
      alt.at(-1)!.push(item);
    }
    return alt;
  }

  private atom(): Item {
    const p = this.p;
    const c = p[this.i++]!;
    const item = (kind: Item['kind'], alt?: Alt): Item => ({ kind, alt, min: 1, max: 1 });
    if (c === '^') return item('start');
    if (c === '$') return item('end');
    if (c === '\\') {
      const e = p[this.i++];
      if (e === undefined) throw new Error('trailing backslash');
      // \b, \B: assertions; \1-\9 and \k<name>: back-references, which may match nothing.
      if (e === 'b' || e === 'B' || /[1-9]/.test(e)) return item('zero');
      if (e === 'k' && p[this.i] === '<') {
        this.i = p.indexOf('>', this.i) + 1 || p.length;
        return item('zero');
      }
      // \p{...}, \P{...}, \u{...}: the braces belong to the escape, not a quantifier.
      if ((e === 'p' || e === 'P' || e === 'u') && p[this.i] === '{')
        this.i = p.indexOf('}', this.i) + 1 || p.length;
      return item('char');
    }
    if (c === '[') {
      // A class ends at the first unescaped ']' after its first character.
      let j = this.i;
      if (p[j] === '^') j++;
      for (; j < p.length && p[j] !== ']'; j++) if (p[j] === '\\') j++;
      if (j >= p.length) throw new Error('unclosed [');
      this.i = j + 1;
      return item('char');
    }
    if (c === '(') {
      let zeroWidth = false;
      if (p[this.i] === '?') {
        const rest = p.slice(this.i + 1);
        if (/^(?:[=!]|<[=!])/.test(rest)) {
          zeroWidth = true; // a lookaround (refused elsewhere): it consumes nothing
          this.i += rest[0] === '<' ? 3 : 2;
        } else if (rest.startsWith(':')) this.i += 2;
        else if (rest.startsWith('<')) this.i = p.indexOf('>', this.i) + 1 || p.length;
        else throw new Error('unknown group');
      }
      const alt = this.alternation();
      if (p[this.i] !== ')') throw new Error('unclosed (');
      this.i++;
      return zeroWidth ? item('zero') : item('group', alt);
    }
    return item('char');
  }

  private quantifier(item: Item): void {
    const p = this.p;
    const c = p[this.i];
    let range: [number, number] | undefined;
    if (c === '*') range = [0, Infinity];
    else if (c === '+') range = [1, Infinity];
    else if (c === '?') range = [0, 1];
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(this.i));
      if (m) {
        range = [Number(m[1]), m[2] === undefined ? Number(m[1]) : m[3] ? Number(m[3]) : Infinity];
        this.i += m[0].length - 1;
      }
    }
    if (!range) return;
    this.i++;
    if (p[this.i] === '?') this.i++; // lazy
    [item.min, item.max] = range;
  }
}
