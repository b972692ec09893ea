import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callShape, callSyntax } from './call-syntax.js';
import { pythonStyleJson } from './python-literal.js';
import { TOOL_PARSER_FAMILIES } from './registry.js';

const calls = [
  { name: 'get_weather', args: { city: '東京', days: 2 } },
  { name: 'get_time', args: { tz: 'UTC' } },
];

function pythonKwargs(args: Record<string, unknown>): string {
  return `(${Object.entries(args)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ')})`;
}

describe('call syntax data', () => {
  for (const family of TOOL_PARSER_FAMILIES) {
    const syntax = callSyntax(family);
    if (syntax === null) {
      it(`${family.name}: no call syntax (content as is)`, () => assert.equal(family.name, 'chatglm2'));
      continue;
    }
    it(`${family.name}: two calls written from the data parse back to the same calls`, () => {
      const text =
        syntax.groupBegin +
        calls
          .map((c) => {
            const shape = callShape(syntax, { name: c.name, parameters: { type: 'object' } });
            const args = syntax.arguments === 'json' ? pythonStyleJson(c.args) : pythonKwargs(c.args);
            return shape.prefix + args + shape.suffix;
          })
          .join(syntax.separator) +
        syntax.groupEnd;
      const parsed = family.parse(text, true, { toolNames: calls.map((c) => c.name) });
      assert.deepEqual(
        parsed.calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) as unknown })),
        calls.map((c) => ({ name: c.name, args: c.args })),
      );
      assert.equal(parsed.content, '');
      assert.ok(text.includes(syntax.trigger), 'the trigger opens the call text');
    });
  }
});
