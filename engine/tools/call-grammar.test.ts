import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EngineError } from '../errors.js';
import { loadGrammarAddon } from '../../native/native.js';
import { bareCompiler, grammarAccepts } from '../structured/bare-grammar.js';
import type { ChatTool, ToolChoice } from '../types.js';
import { toolCallConstraint } from './call-grammar.js';
import { callSyntax, type CallSyntax } from './call-syntax.js';
import { pythonStyleJson } from './python-literal.js';
import { TOOL_PARSER_FAMILIES } from './registry.js';
import type { ToolParserFamily } from './types.js';

const xg = loadGrammarAddon();

const tools: ChatTool[] = [
  {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
  { name: 'get_time' },
];

function render(syntax: CallSyntax, calls: { name: string; args: object }[]): string {
  return (
    syntax.groupBegin +
    calls.map((c) => syntax.prefix(c.name) + pythonStyleJson(c.args) + syntax.suffix).join(syntax.separator) +
    syntax.groupEnd
  );
}

async function accepts(
  family: ToolParserFamily,
  choice: ToolChoice,
  text: string,
  opts: { parallel?: boolean; reasoning?: boolean } = {},
): Promise<boolean> {
  const c = toolCallConstraint(
    {
      tools,
      toolChoice: choice,
      ...(opts.parallel !== undefined ? { parallelToolCalls: opts.parallel } : {}),
    },
    family,
    opts.reasoning ?? false,
  );
  assert.ok(c && c.kind === 'structural_tag');
  const g = xg.compileStructuralTag(bareCompiler(), c.tag);
  try {
    return grammarAccepts(g, text);
  } finally {
    xg.dispose(g);
  }
}

const weather = { name: 'get_weather', args: { city: '東京', days: 2 } };
const time = { name: 'get_time', args: {} };

describe('tool-call grammar', () => {
  for (const family of TOOL_PARSER_FAMILIES) {
    const syntax = callSyntax(family);
    if (syntax === null || syntax.arguments !== 'json') {
      it(`${family.name}: a forced call is 501 (no JSON call syntax); auto stays unconstrained`, () => {
        for (const choice of ['required', { function: 'get_time' }] as const)
          assert.throws(
            () => toolCallConstraint({ tools, toolChoice: choice }, family, false),
            (e: unknown) =>
              e instanceof EngineError && e.code === 'UNIMPLEMENTED' && e.field === 'prompt.tool_choice',
          );
        assert.equal(toolCallConstraint({ tools, toolChoice: 'auto' }, family, false), null);
      });
      continue;
    }
    it(`${family.name}: required takes two calls that the parser reads back; refuses prose and bad arguments`, async () => {
      const two = render(syntax, [weather, time]);
      assert.equal(await accepts(family, 'required', two), true, two);
      const parsed = family.parse(two, true, { toolNames: tools.map((t) => t.name) });
      assert.deepEqual(
        parsed.calls.map((c) => [c.name, JSON.parse(c.arguments)]),
        [
          ['get_weather', weather.args],
          ['get_time', {}],
        ],
      );
      assert.equal(await accepts(family, 'required', render(syntax, [weather])), true);
      assert.equal(await accepts(family, 'required', 'Sure! ' + two), false, 'text before the calls');
      assert.equal(await accepts(family, 'required', ''), false, 'no call at all');
      const missing = render(syntax, [{ name: 'get_weather', args: { days: 2 } }]);
      assert.equal(await accepts(family, 'required', missing), false, 'required property missing');
      const extra = render(syntax, [{ name: 'get_time', args: { tz: 'UTC' } }]);
      assert.equal(await accepts(family, 'required', extra), false, 'property the schema does not have');
      const unknown = render(syntax, [{ name: 'launch', args: {} }]);
      assert.equal(await accepts(family, 'required', unknown), false, 'a tool that is not offered');
    });
    it(`${family.name}: parallel_tool_calls false and a named function allow exactly one call`, async () => {
      const two = render(syntax, [weather, time]);
      assert.equal(await accepts(family, 'required', two, { parallel: false }), false);
      assert.equal(await accepts(family, 'required', render(syntax, [weather]), { parallel: false }), true);
      assert.equal(await accepts(family, { function: 'get_time' }, render(syntax, [time])), true);
      assert.equal(await accepts(family, { function: 'get_time' }, render(syntax, [weather])), false);
      assert.equal(await accepts(family, { function: 'get_time' }, render(syntax, [time, time])), false);
    });
    it(`${family.name}: a reasoning model may think before a forced call`, async () => {
      const call = render(syntax, [weather]);
      assert.equal(
        await accepts(family, 'required', `<think>\nrain?\n</think>\n\n${call}`, { reasoning: true }),
        true,
      );
      assert.equal(await accepts(family, 'required', `rain?\n</think>\n${call}`, { reasoning: true }), true);
      assert.equal(await accepts(family, 'required', call, { reasoning: true }), true);
      assert.equal(await accepts(family, 'required', `rain?</think>\n\nno call`, { reasoning: true }), false);
    });
    const auto = toolCallConstraint({ tools, toolChoice: 'auto' }, family, false);
    if (auto === null) {
      it(`${family.name}: auto is unconstrained (its calls do not begin with a trigger)`, () =>
        assert.ok(!syntax.prefix('get_time').startsWith(syntax.trigger)));
      continue;
    }
    it(`${family.name}: auto lets text through and constrains a call once it starts`, async () => {
      assert.equal(await accepts(family, 'auto', 'It is sunny in Paris.'), true);
      assert.equal(await accepts(family, 'auto', `Let me check.\n${render(syntax, [weather])}`), true);
      const bad = `Let me check.\n${render(syntax, [{ name: 'get_weather', args: { town: 'Paris' } }])}`;
      assert.equal(await accepts(family, 'auto', bad), false);
    });
  }

  it('checks a forced tool schema and names it; auto with such a schema is unconstrained', () => {
    const family = TOOL_PARSER_FAMILIES.find((f) => f.name === 'qwen2_5')!;
    // multipleOf 0 is not JSON Schema (a forced call's schema the grammar enforces only in
    // part is accepted and its calls are checked; under auto only exact ones constrain).
    const odd: ChatTool[] = [tools[0]!, { name: 'div', parameters: { type: 'number', multipleOf: 0 } }];
    assert.throws(
      () => toolCallConstraint({ tools: odd, toolChoice: 'required' }, family, false),
      (e: unknown) =>
        e instanceof EngineError &&
        e.code === 'INVALID_ARGUMENT' &&
        e.field === 'prompt.tools[1].parameters.multipleOf',
    );
    // Only the named tool's schema matters for a named choice.
    assert.ok(toolCallConstraint({ tools: odd, toolChoice: { function: 'get_weather' } }, family, false));
    assert.equal(toolCallConstraint({ tools: odd, toolChoice: 'auto' }, family, false), null);
    assert.equal(toolCallConstraint({ tools, toolChoice: 'none' }, family, false), null);
    assert.equal(toolCallConstraint({ toolChoice: 'auto' }, family, false), null);
  });
});

describe('tool parameter schemas get the same rewrite as response_format schemas', () => {
  it('enforces int32 and a required property beside anyOf', async () => {
    const family = TOOL_PARSER_FAMILIES.find((f) => f.name === 'qwen2_5')!;
    const syntax = callSyntax(family)!;
    const c = toolCallConstraint(
      {
        tools: [
          {
            name: 'pick',
            parameters: {
              type: 'object',
              properties: { n: { type: 'integer', format: 'int32' } },
              required: ['n'],
              anyOf: [{ properties: { tag: { type: 'string' } } }],
            },
          },
        ],
        toolChoice: { function: 'pick' },
      },
      family,
      false,
    );
    assert.ok(c && c.kind === 'structural_tag');
    const g = xg.compileStructuralTag(bareCompiler(), c.tag);
    try {
      const call = (args: object) => render(syntax, [{ name: 'pick', args }]);
      assert.equal(grammarAccepts(g, call({ n: 5 })), true);
      assert.equal(grammarAccepts(g, call({ n: 3000000000 })), false);
      assert.equal(grammarAccepts(g, call({ tag: 'x' })), false);
    } finally {
      xg.dispose(g);
    }
  });

  it('refuses what no document matches and relaxes the rest, as response_format does', () => {
    const family = TOOL_PARSER_FAMILIES.find((f) => f.name === 'qwen2_5')!;
    const tool = (parameters: Record<string, unknown>): ChatTool[] => [{ name: 'f', parameters }];
    const forced = (parameters: Record<string, unknown>) =>
      toolCallConstraint({ tools: tool(parameters), toolChoice: 'required' }, family, false);
    // an empty range where the call must hold a value: refused under auto and forced alike
    const empty = {
      type: 'object',
      properties: { n: { type: 'integer', minimum: 5, maximum: 3 } },
      required: ['n'],
    };
    assert.throws(
      () => forced(empty),
      (e: unknown) =>
        e instanceof EngineError &&
        e.code === 'INVALID_ARGUMENT' &&
        e.field === 'prompt.tools[0].parameters.properties.n.minimum' &&
        /no document matches the schema$/.test(e.rule ?? ''),
    );
    assert.equal(toolCallConstraint({ tools: tool(empty), toolChoice: 'auto' }, family, false), null);
    // a pattern xgrammar would misread (JS-style slashes) beside null: checked on the call
    const slashed = {
      type: 'object',
      properties: { y: { type: ['string', 'null'], pattern: '/^[0-9]{4}$/' } },
      required: ['y'],
    };
    const c = forced(slashed);
    assert.ok(c && c.kind === 'structural_tag' && c.checks?.length === 1, JSON.stringify(c));
    assert.ok(!JSON.stringify(c.tag).includes('[0-9]{4}'), 'the misread pattern is not compiled');
  });
});
