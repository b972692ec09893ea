/**
 * The request log on a real server: one line per request once its response has ended (a
 * stream's too), with method, route, family, status, latency, tokens and the engine request
 * id; JSON or text; the level filter; no prompt text unless `logPrompts` asks for it; and
 * LogConfig mapped from config.json.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gatewayConfigFromMindie } from '../gateways/config.js';
import type { RequestLogConfig } from '../gateways/shared/request-log.js';
import { freePortConfig, getJson, MODEL_NAME, postJson, startHarness } from './gateways-harness.js';

const SECRET = 'the-secret-prompt-words';

async function logOf(requestLog: Omit<RequestLogConfig, 'file'>, send: (url: string) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'prism-log-test-'));
  const path = join(dir, 'requests.log');
  const h = await startHarness(
    freePortConfig({ requestLog: { ...requestLog, file: { path, maxBytes: 1 << 20, maxFiles: 2 } } }),
  );
  try {
    await send(h.url);
  } finally {
    await h.close();
  }
  const lines = readFileSync(path, 'utf-8').trim().split('\n');
  rmSync(dir, { recursive: true, force: true });
  return lines;
}

test('JSON lines: one per request, streams included, tokens and request id, no prompt text', async () => {
  const lines = await logOf({ level: 'Info', format: 'json', includePrompt: false }, async (url) => {
    const chat = { model: MODEL_NAME, messages: [{ role: 'user', content: SECRET }], max_tokens: 3 };
    assert.equal((await postJson(`${url}/v1/chat/completions`, chat)).status, 200);
    const stream = await postJson(`${url}/v1/chat/completions`, { ...chat, stream: true });
    assert.equal(stream.status, 200);
    assert.equal((await postJson(`${url}/v1/chat/completions`, { messages: [] })).status, 400);
    assert.equal((await getJson(`${url}/v2/models/${MODEL_NAME}`)).status, 200);
    assert.equal((await getJson(`${url}/health`)).status, 200); // a probe: debug, below Info
  });
  assert.ok(!lines.join('\n').includes(SECRET));
  const entries = lines.map((l) => JSON.parse(l));
  assert.deepEqual(
    entries.map((e) => [e.method, e.path, e.status, e.level]),
    [
      ['POST', '/v1/chat/completions', 200, 'info'],
      ['POST', '/v1/chat/completions', 200, 'info'],
      ['POST', '/v1/chat/completions', 400, 'warning'],
      ['GET', `/v2/models/${MODEL_NAME}`, 200, 'info'],
    ],
  );
  for (const e of entries.slice(0, 2)) {
    assert.equal(e.family, 'openai');
    assert.equal(e.route, '/v1/chat/completions');
    assert.match(e.request_id, /^chatcmpl-/);
    assert.ok(e.prompt_tokens > 0);
    assert.equal(e.completion_tokens, 3);
    assert.ok(e.latency_ms > 0);
    assert.match(e.time, /^\d{4}-\d\d-\d\dT/);
  }
  assert.notEqual(entries[0].request_id, entries[1].request_id);
  assert.equal(entries[2].request_id, undefined);
  assert.equal(entries[3].route, '/v2/models/:model');
  assert.equal(entries[3].family, null);
});

test('text lines at level Warning: only failures; logPrompts writes the prompt', async () => {
  const lines = await logOf({ level: 'Warning', format: 'text', includePrompt: true }, async (url) => {
    await postJson(`${url}/generate`, { inputs: SECRET, parameters: { max_new_tokens: 2 } });
    await postJson(`${url}/generate`, { inputs: SECRET, parameters: { max_new_tokens: 0 } });
    await postJson(`${url}/v1/completions`, { model: 'nope', prompt: SECRET });
  });
  assert.equal(lines.length, 2);
  assert.match(
    lines[0],
    /^\S+ WARNING POST \/generate status=422 latency_ms=[\d.]+ family=tgi route=\/generate/,
  );
  assert.match(lines[1], /WARNING POST \/v1\/completions status=404 .*family=openai/);
  assert.ok(lines[1].includes(`prompt=${JSON.stringify(SECRET)}`), lines[1]);
});

test('LogConfig: level, format, file or stderr, prompts', () => {
  const base = { ServerConfig: { httpsEnabled: false } };
  assert.deepEqual(gatewayConfigFromMindie(base, '/etc/prism').requestLog, {
    level: 'Info',
    format: 'text',
    includePrompt: false,
  });
  const cfg = gatewayConfigFromMindie(
    {
      ...base,
      LogConfig: {
        logLevel: 'Error',
        logFormat: 'json',
        logToFile: true,
        logPath: 'logs/prism.log',
        logFileSize: 5,
        logFileNum: 3,
        logPrompts: true,
      },
    },
    '/etc/prism',
  );
  assert.deepEqual(cfg.requestLog, {
    level: 'Error',
    format: 'json',
    includePrompt: true,
    file: { path: '/etc/prism/logs/prism.log', maxBytes: 5 << 20, maxFiles: 3 },
  });
});
