/** The Python `openai` SDK (requirements-dev.txt) against the gateway: one chat, one streamed chat, a 404. */
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

test('python openai SDK: chat, streamed chat with usage, NotFoundError', async () => {
  let stdout: string;
  try {
    ({ stdout } = await run('python3', ['test/clients/openai_chat.py', `${h.url}/v1`, MODEL_NAME], {
      timeout: 240000,
    }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    if (/No module named 'openai'/.test(e.stderr ?? '')) {
      assert.fail('the Python openai package is missing: pip install -r requirements-dev.txt');
    }
    throw err;
  }
  const r = JSON.parse(stdout);
  assert.ok(r.content.length > 0);
  assert.equal(r.streamed, r.content);
  assert.equal(r.stream_finish_reason, r.finish_reason);
  assert.deepEqual(r.stream_usage, r.usage);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 8);
  assert.equal(r.not_found_error, 'NotFoundError');
});
