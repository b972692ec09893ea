/**
 * Two frameworks on the real default model (requirements-dev.in pins both): LangChain's
 * `ChatOpenAI` (a chat, a stream, a forced tool call, `with_structured_output` by JSON schema)
 * and LiteLLM's `completion()` through its `openai/`, `ollama_chat/` and `ollama/` providers
 * (the OpenAI-compatible routes, Ollama's /api/chat and /api/generate), whole and streamed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, runPythonClient, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

test('LangChain ChatOpenAI: chat, stream, a forced tool call, structured output', async () => {
  const r = await runPythonClient('langchain_chat.py', [`${h.url}/v1`, MODEL_NAME], 240000);
  assert.ok(r.chat.length > 0);
  assert.equal(r.streamed, r.chat);
  assert.equal(r.tool_calls.length >= 1, true);
  assert.equal(r.tool_calls[0].name, 'get_weather');
  assert.equal(typeof r.tool_calls[0].args.city, 'string');
  assert.equal(typeof r.structured.color, 'string');
  assert.ok(Number.isInteger(r.structured.count));
});

test('LiteLLM completion(): openai/, ollama_chat/ and ollama/ providers, whole and streamed', async () => {
  const r = await runPythonClient('litellm_completion.py', [h.url, MODEL_NAME], 300000);
  for (const provider of ['openai', 'ollama_chat', 'ollama']) {
    const p = r[provider];
    assert.ok(p.text.length > 0, provider);
    assert.equal(p.streamed, p.text, provider);
    assert.ok(p.completion_tokens >= 1 && p.completion_tokens <= 12, provider);
    assert.ok(p.prompt_tokens > 0, provider);
  }
  // The chat routes of both families render the same prompt.
  assert.equal(r.ollama_chat.text, r.openai.text);
  assert.equal(r.ollama_chat.prompt_tokens, r.openai.prompt_tokens);
});
