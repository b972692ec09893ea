/**
 * API keys per listener (gateways/shared/auth.ts): the official OpenAI SDKs (npm and Python)
 * pass a key and are answered; a missing or wrong key gets 401 in each family's error shape,
 * with `WWW-Authenticate: Bearer`, and never a model answer. Health and metrics routes are open
 * by default; the management listener takes its own keys.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { gatewayConfigFromMindie } from '../gateways/config.js';
import { loadConfigs, UsageError } from '../gateways/serve-loop.js';
import { startGateway } from '../gateways/server.js';
import { ApiKeyConfigError, ApiKeySet, presentedKey } from '../gateways/shared/auth.js';
import { freePortConfig, MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

const SERVICE_KEYS = ['sk-service-one', 'sk-service-two'];
const MANAGEMENT_KEY = 'sk-management';

let h: Harness;
before(async () => {
  const base = freePortConfig();
  h = await startHarness({
    ...base,
    service: { ...base.service, apiKeys: SERVICE_KEYS },
    management: { ...base.management, apiKeys: [MANAGEMENT_KEY] },
    metrics: { ...base.metrics, apiKeys: [MANAGEMENT_KEY] },
  });
});
after(async () => {
  await h?.close();
});

const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

describe('OpenAI npm SDK', () => {
  test('the right key is answered, with either configured key', async () => {
    for (const apiKey of SERVICE_KEYS) {
      const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
      const r = await client.chat.completions.create({
        model: MODEL_NAME,
        messages: [{ role: 'user', content: 'Say hi.' }],
        max_tokens: 3,
        temperature: 0,
      });
      assert.ok(r.choices[0].message.content!.length > 0);
      const models = await client.models.list();
      assert.equal(models.data[0].id, MODEL_NAME);
    }
  });

  test('a wrong key is AuthenticationError 401 with invalid_api_key, no completion', async () => {
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: MODEL_NAME, messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
        assert.equal(err.status, 401);
        assert.equal(err.code, 'invalid_api_key');
        assert.equal(err.type, 'invalid_request_error');
        return true;
      },
    );
  });
});

test('Python openai SDK: the right key is answered, a wrong one is AuthenticationError', async () => {
  const { stdout } = await promisify(execFile)(
    'python3',
    ['test/clients/openai_auth.py', `${h.url}/v1`, MODEL_NAME, SERVICE_KEYS[1], 'sk-wrong'],
    { timeout: 240000 },
  );
  const r = JSON.parse(stdout);
  assert.ok(r.content.length > 0);
  assert.ok(r.usage.completion_tokens > 0);
  assert.equal(r.bad_key_error, 'AuthenticationError');
  assert.equal(r.bad_key_status, 401);
  assert.equal(r.bad_key_code, 'invalid_api_key');
});

describe('401 in each family’s shape, never an answer', () => {
  const cases: [string, string, unknown, (json: Record<string, unknown>) => void][] = [
    [
      'openai completions',
      '/v1/completions',
      { model: MODEL_NAME, prompt: 'hi', max_tokens: 2 },
      (j) => {
        const e = j.error as Record<string, unknown>;
        assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
        assert.equal(e.code, 'invalid_api_key');
      },
    ],
    [
      'anthropic messages',
      '/v1/messages',
      { model: MODEL_NAME, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] },
      (j) => assert.deepEqual((j.error as Record<string, unknown>).type, 'authentication_error'),
    ],
    [
      'ollama chat',
      '/api/chat',
      {
        model: MODEL_NAME,
        stream: false,
        options: { num_predict: 2 },
        messages: [{ role: 'user', content: 'hi' }],
      },
      (j) => assert.equal(typeof j.error, 'string'),
    ],
    [
      'tgi generate',
      '/generate',
      { inputs: 'hi', parameters: { max_new_tokens: 2 } },
      (j) => assert.equal(j.error_type, 'unauthorized'),
    ],
    [
      'vllm generate',
      '/generate',
      { prompt: 'hi', max_tokens: 2 },
      (j) => assert.equal(j.error_type, 'unauthorized'),
    ],
    [
      'kserve infer',
      `/v2/models/${MODEL_NAME}/generate`,
      { text_input: 'hi', parameters: { max_new_tokens: 2 } },
      (j) => assert.equal(j.error_type, 'Unauthorized'),
    ],
    [
      'native infer',
      '/infer',
      { inputs: 'hi', stream: false, max_tokens: 2 },
      (j) => assert.equal(j.error_type, 'Unauthorized'),
    ],
  ];
  for (const [name, path, body, shape] of cases) {
    test(`${name}: missing and wrong key are 401; x-api-key and Bearer are accepted`, async () => {
      for (const headers of [{}, bearer('sk-wrong'), { 'x-api-key': 'sk-wrong' }, bearer(MANAGEMENT_KEY)]) {
        const r = await postJson(h.url + path, body, headers);
        assert.equal(r.status, 401, `${JSON.stringify(headers)}: ${r.text}`);
        assert.equal(r.headers.get('www-authenticate'), 'Bearer');
        assert.equal(typeof r.json.error === 'string' || typeof r.json.error === 'object', true);
        assert.doesNotMatch(r.text, /generated_text|choices|text_output/);
        shape(r.json);
      }
      for (const headers of [bearer(SERVICE_KEYS[0]), { 'x-api-key': SERVICE_KEYS[1] }]) {
        const r = await postJson(h.url + path, body, headers);
        assert.equal(r.status, 200, `${JSON.stringify(headers)}: ${r.text}`);
      }
    });
  }
});

test('health and metrics routes are open by default; status and control are keyed', async () => {
  for (const url of [
    `${h.url}/health`,
    `${h.url}/v2/health/live`,
    `${h.url}/v2/health/ready`,
    `${h.url}/v2/models/${MODEL_NAME}/ready`,
    `${h.managementUrl}/health`,
    `${h.metricsUrl}/metrics`,
    `${h.managementUrl}/metrics-json`,
  ]) {
    assert.equal((await fetch(url)).status, 200, url);
  }
  assert.equal((await fetch(`${h.url}/info`)).status, 401);
  assert.equal((await fetch(`${h.url}/v1/models`)).status, 401);
});

test('openHealthAndMetrics: false (config.json) keys health and metrics on every listener', async () => {
  const fromFile = gatewayConfigFromMindie(
    {
      ServerConfig: {
        httpsEnabled: false,
        ipAddress: '127.0.0.1',
        managementIpAddress: '127.0.0.1',
        apiKeys: SERVICE_KEYS,
        managementApiKeys: [MANAGEMENT_KEY],
        openHealthAndMetrics: false,
      },
    },
    tmpdir(),
  );
  assert.equal(fromFile.openHealthAndMetrics, false);
  // Free ports, and a second gateway on the harness's engine client.
  const gw = await startGateway({
    engine: h.client,
    config: {
      ...fromFile,
      service: { ...fromFile.service, port: 0 },
      management: { ...fromFile.management, port: 0 },
      metrics: { ...fromFile.metrics, port: 0 },
    },
  });
  try {
    const service = gw.url('service');
    const management = gw.url('management');
    const metrics = gw.url('metrics');
    const routes: [string, string][] = [
      [`${service}/health`, SERVICE_KEYS[0]],
      [`${service}/v2/health/live`, SERVICE_KEYS[1]],
      [`${service}/v2/health/ready`, SERVICE_KEYS[0]],
      [`${service}/v2/models/${MODEL_NAME}/ready`, SERVICE_KEYS[0]],
      [`${service}/health/timed-5`, SERVICE_KEYS[0]],
      [`${management}/health`, MANAGEMENT_KEY],
      [`${management}/metrics-json`, MANAGEMENT_KEY],
      [`${metrics}/metrics`, MANAGEMENT_KEY],
    ];
    for (const [url, key] of routes) {
      const bare = await fetch(url);
      assert.equal(bare.status, 401, url);
      assert.match(bare.headers.get('www-authenticate') ?? '', /^Bearer/, url);
      assert.ok(JSON.stringify(await bare.json()).includes('API key'), url);
      const other = key === MANAGEMENT_KEY ? SERVICE_KEYS[0] : MANAGEMENT_KEY;
      assert.equal(
        (await fetch(url, { headers: bearer(other) })).status,
        401,
        `${url} with another listener's key`,
      );
      assert.equal((await fetch(url, { headers: bearer(key) })).status, 200, `${url} with its key`);
      assert.equal(
        (await fetch(url, { headers: { 'x-api-key': key } })).status,
        200,
        `${url} with x-api-key`,
      );
    }
  } finally {
    await gw.close();
  }
});

test('the web UI pages and assets load without a key (they ask for it); the APIs they call stay keyed', async () => {
  const html = { accept: 'text/html' };
  const page = await fetch(`${h.url}/`, { headers: html });
  assert.equal(page.status, 200);
  const dashboard = await fetch(`${h.managementUrl}/dashboard`, { headers: html });
  assert.equal(dashboard.status, 200);
  const asset = /src="(\/web\/assets\/[^"]+)"/.exec(await page.text())?.[1];
  assert.ok(asset, 'the playground page names its script');
  assert.equal((await fetch(`${h.url}${asset}`)).status, 200);
  // GET / without HTML is TGI's route (POST only): still no answer but 405, never data.
  assert.notEqual((await fetch(`${h.url}/`)).status, 200);
  assert.equal((await fetch(`${h.url}/v1/models`)).status, 401);
  assert.equal((await fetch(`${h.managementUrl}/v1/status`)).status, 401);
});

test('the management listener takes its own key, not a service key', async () => {
  const status = `${h.managementUrl}/v1/status`;
  assert.equal((await fetch(status)).status, 401);
  assert.equal((await fetch(status, { headers: bearer(SERVICE_KEYS[0]) })).status, 401);
  assert.equal((await fetch(status, { headers: bearer(MANAGEMENT_KEY) })).status, 200);
  // ... and the management key does not open the service listener.
  assert.equal((await fetch(`${h.url}/v1/models`, { headers: bearer(MANAGEMENT_KEY) })).status, 401);
});

describe('keys and their sources', () => {
  test('ApiKeySet compares every key; presentedKey reads Bearer and x-api-key', () => {
    const set = new ApiKeySet(['a-key', 'b-key']);
    assert.equal(set.matches('a-key'), true);
    assert.equal(set.matches('b-key'), true);
    assert.equal(set.matches('a-ke'), false);
    assert.equal(set.matches(''), false);
    assert.equal(new ApiKeySet([]).enabled, false);
    assert.equal(presentedKey({ authorization: 'Bearer  tok ' }), 'tok');
    assert.equal(presentedKey({ authorization: 'bearer tok' }), 'tok');
    assert.equal(presentedKey({ authorization: 'Basic dXNlcg==' }), undefined);
    assert.equal(presentedKey({ 'x-api-key': 'tok2' }), 'tok2');
    assert.equal(presentedKey({}), undefined);
  });

  test('config.json: apiKeys plus apiKeyFile (relative to the file), management keys apart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prism-keys-'));
    try {
      writeFileSync(join(dir, 'keys.txt'), '# service keys\nk-file-1\n\n  k-file-2  \n');
      writeFileSync(join(dir, 'mgmt.txt'), 'm-file\n');
      const cfg = gatewayConfigFromMindie(
        {
          ServerConfig: {
            httpsEnabled: false,
            apiKeys: ['k-inline'],
            apiKeyFile: 'keys.txt',
            managementApiKeyFile: join(dir, 'mgmt.txt'),
            openHealthAndMetrics: false,
          },
        },
        dir,
      );
      assert.deepEqual(cfg.service.apiKeys, ['k-inline', 'k-file-1', 'k-file-2']);
      assert.deepEqual(cfg.management.apiKeys, ['m-file']);
      assert.deepEqual(cfg.metrics.apiKeys, ['m-file']);
      assert.equal(cfg.openHealthAndMetrics, false);
      writeFileSync(join(dir, 'empty.txt'), '# nothing\n');
      assert.throws(
        () => gatewayConfigFromMindie({ ServerConfig: { apiKeyFile: 'empty.txt' } }, dir),
        (e: unknown) => e instanceof ApiKeyConfigError && /empty\.txt holds no key/.test(e.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('flags: --api-key (repeatable) and --api-key-file; a bad file is a usage error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prism-keys-'));
    try {
      writeFileSync(join(dir, 'keys.txt'), 'from-file\n');
      const { gateway } = loadConfigs({
        'api-key': ['one', 'two'],
        'api-key-file': join(dir, 'keys.txt'),
        'management-api-key': ['m'],
      });
      assert.deepEqual(gateway.service.apiKeys, ['one', 'two', 'from-file']);
      assert.deepEqual(gateway.management.apiKeys, ['m']);
      assert.throws(
        () => loadConfigs({ 'api-key-file': join(dir, 'missing.txt') }),
        (e: unknown) =>
          e instanceof UsageError && /--api-key-file: cannot read .*missing\.txt \(ENOENT\)/.test(e.message),
      );
      assert.throws(
        () => loadConfigs({ 'api-key': ['has space'] }),
        (e: unknown) => e instanceof UsageError && /--api-key: an API key must be/.test(e.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
