/**
 * The OpenAI Agents SDK (openai-agents, pinned in requirements-dev.in) on the real default
 * model through its default model class, the Responses model: one tool round trip — a forced
 * function call, the tool run by the SDK, its output sent back as a function_call_output item,
 * and the final answer.
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

test('Agents SDK: the default Responses model calls a tool, gets its output, answers', async () => {
  const { stdout } = await run('python3', ['test/clients/openai_agents_tool.py', `${h.url}/v1`, MODEL_NAME], {
    timeout: 240000,
  });
  const r = JSON.parse(stdout);
  assert.equal(r.model_class, 'OpenAIResponsesModel');
  assert.equal(r.tool_calls.length, 1);
  assert.equal(typeof r.tool_calls[0], 'string');
  assert.deepEqual(r.items.slice(0, 2), ['tool_call_item', 'tool_call_output_item']);
  assert.equal(r.items.at(-1), 'message_output_item');
  assert.equal(typeof r.final_output, 'string');
  assert.equal(r.responses, 2);
});
