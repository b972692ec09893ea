/**
 * pydantic-ai (pydantic-ai-slim[openai], pinned in requirements-dev.in) on the real default
 * model through OpenAIChatModel and OpenAIResponsesModel: structured output by its output
 * tool and by NativeOutput (json_schema), function tool round trips, a streamed run.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { MODEL_NAME, startHarness, type Harness } from './gateways-harness.js';

const run = promisify(execFile);
let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

function assertCity(c: { name: unknown; country: unknown; is_capital: unknown }): void {
  assert.equal(typeof c.name, 'string');
  assert.equal(typeof c.country, 'string');
  assert.equal(typeof c.is_capital, 'boolean', JSON.stringify(c));
}

test('pydantic-ai: chat and Responses models, output tool, NativeOutput, tool round trips, streaming', async () => {
  const { stdout } = await run('python3', ['test/clients/pydantic_ai_agent.py', `${h.url}/v1`, MODEL_NAME], {
    timeout: 240000,
  });
  const r = JSON.parse(stdout);
  // The output tool is called with arguments the schema allows: pydantic validated them.
  assertCity(r.chat_tool_output);
  assert.deepEqual(r.chat_tool_output_parts, ['user-prompt', 'tool-call', 'tool-return']);
  assertCity(r.responses_native_output);
  // Forced on the first step, text on the second: call, result, answer.
  for (const key of ['chat_tool', 'responses_tool']) {
    assert.equal(r[key].calls.length, 1, key);
    assert.equal(typeof r[key].calls[0], 'string', key);
    assert.deepEqual(r[key].parts, ['user-prompt', 'tool-call', 'tool-return', 'text'], key);
    assert.equal(typeof r[key].output, 'string', key);
  }
  assert.equal(r.chat_stream.calls.length, 1);
  assert.ok(r.chat_stream.deltas >= 1);
  assert.ok(r.chat_stream.text.length > 0);
});
