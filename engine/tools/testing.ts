/**
 * Golden-test helper for the parser families: the unary parse of a text must equal the
 * expected calls and content, and streaming the same text — one character at a time, and cut
 * in two at every character boundary — must produce deltas that add up to exactly that.
 */
import assert from 'node:assert/strict';
import { ToolCallStream } from './stream.js';
import type { ParseContext, ParsedOutput, ToolCallDelta, ToolParserFamily } from './types.js';

export function replay(
  family: ToolParserFamily,
  context: ParseContext,
  pieces: readonly string[],
  label: string,
): ParsedOutput {
  const stream = new ToolCallStream(family, context);
  let text = '';
  let content = '';
  const calls: { id: string; name: string; args: string }[] = [];
  const take = (deltas: readonly ToolCallDelta[]): void => {
    for (const d of deltas) {
      if (d.id !== undefined) {
        assert.equal(d.index, calls.length, `${label}: calls open in order`);
        assert.equal(d.type, 'function');
        assert.ok(d.function.name, `${label}: first delta names the function`);
        calls.push({ id: d.id, name: d.function.name, args: d.function.arguments ?? '' });
      } else {
        const c = calls[d.index];
        assert.ok(c, `${label}: arguments for an opened call`);
        assert.equal(d.function.name, undefined, `${label}: the name is sent once`);
        c.args += d.function.arguments ?? '';
      }
    }
  };
  pieces.forEach((piece, k) => {
    text += piece;
    const d = stream.update(text, k === pieces.length - 1);
    content += d.content;
    take(d.toolCalls);
  });
  const result = stream.result();
  assert.equal(content, result.content, `${label}: streamed content = result content`);
  assert.deepEqual(
    calls.map((c) => ({ id: c.id, name: c.name, args: c.args })),
    result.calls.map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments })),
    `${label}: streamed calls = result calls`,
  );
  return { content, calls: calls.map((c) => ({ name: c.name, arguments: c.args })) };
}

export function checkGolden(
  family: ToolParserFamily,
  text: string,
  expected: ParsedOutput,
  context: ParseContext = { toolNames: [] },
): void {
  assert.deepEqual(family.parse(text, true, context), expected, 'unary parse');
  const chars = [...text];
  assert.deepEqual(replay(family, context, chars, 'char by char'), expected, 'char by char');
  for (let i = 1; i < chars.length; i++) {
    const cut = [chars.slice(0, i).join(''), chars.slice(i).join('')];
    assert.deepEqual(replay(family, context, cut, `cut at ${i}`), expected, `cut at ${i}`);
  }
}
