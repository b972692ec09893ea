/**
 * The playground and the dashboard in a real browser: Debian's chromium (scripts/ensure-chromium.sh
 * installs it; .ci/run calls that) driven by playwright-core, against the real server on the
 * default model, over plain HTTP and over HTTPS with mutual TLS. The page must stream an
 * answer token by token, show its stats, send the parameters the user set, keep the
 * conversation, show the server's error message, fit a phone-sized window, and the dashboard
 * must show a rising request count.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { makeCa, makeCert } from './certs.js';
import { freePortConfig, postJson, startHarness, type Harness } from './gateways-harness.js';

const CHROMIUM = '/usr/bin/chromium';
const execFileAsync = promisify(execFile);
/** Each test's bound: a stuck page fails its test instead of holding the suite. */
const LIMIT = { timeout: 90_000 };

// Callbacks given to page.evaluate run in the browser; this file is typed for Node, so the few
// browser names they use are declared here.
declare const window: { lengths: number[]; innerWidth: number };
declare const document: {
  activeElement: { id: string } | null;
  documentElement: { scrollWidth: number };
  getElementById(id: string): object | null;
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare class MutationObserver {
  constructor(callback: () => void);
  observe(target: object, options: object): void;
}
let h: Harness;
let tls: RunningGateway;
let dir: string;
let browser: BrowserContext;

/** A CA, a server certificate for 127.0.0.1 and a client certificate, both from that CA. */
function makeCertificates(): void {
  makeCa(dir, 'ca', 'prism-web-ca');
  makeCert(dir, 'server', 'ca', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  makeCert(dir, 'client', 'ca', 'extendedKeyUsage=clientAuth\n');
}

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: run scripts/ensure-chromium.sh (apt-get install chromium)`,
  );
  execFileSync(process.execPath, ['scripts/build-web.mjs'], { stdio: 'inherit' });
  dir = mkdtempSync(join(tmpdir(), 'prism-web-'));
  makeCertificates();
  h = await startHarness();
  const mutual = {
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    caFiles: [join(dir, 'ca.pem')],
    crlFiles: [],
  };
  const plain = freePortConfig();
  tls = await startGateway({
    engine: h.client,
    config: {
      ...plain,
      service: { ...plain.service, tls: mutual },
      management: { ...plain.management, tls: mutual },
    },
  });
  browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 800 },
    // The test CA is not in the browser's store; the client certificate is what mutual TLS checks.
    ignoreHTTPSErrors: true,
    clientCertificates: ['service', 'management'].map((l) => ({
      origin: new URL(tls.url(l as 'service' | 'management')).origin,
      certPath: join(dir, 'client.pem'),
      keyPath: join(dir, 'client.key'),
    })),
  });
});

after(async () => {
  await browser?.close();
  await tls?.close();
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A page that fails the test on any script error, CSP violation or failed load. */
async function openPage(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  await page.goto(url);
  return { page, problems };
}

/** The dashboard's total request count. */
async function count(page: Page): Promise<number> {
  return Number((await page.textContent('#requests-total'))!.replace(/,/g, ''));
}

/** Polls until the condition holds (the test runner's timeout bounds it). */
async function waitUntil(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting until ${what}`);
}

/** Records the answer's text length at each DOM change, to see it arrive in pieces. */
async function watchAnswer(page: Page): Promise<void> {
  await page.evaluate(() => {
    window.lengths = [];
    new MutationObserver(() => {
      const answers = document.querySelectorAll('#messages .message.assistant .content');
      window.lengths.push(answers[answers.length - 1]?.textContent?.length ?? 0);
    }).observe(document.getElementById('messages')!, { subtree: true, childList: true, characterData: true });
  });
}

async function sendAndWait(page: Page, path: string): Promise<Record<string, unknown>> {
  const request = page.waitForRequest((r) => r.url().endsWith(path) && r.method() === 'POST');
  await page.click('#send');
  const body = (await request).postDataJSON() as Record<string, unknown>;
  await page.waitForSelector('#send:not([disabled])');
  return body;
}

async function chatOnce(base: string): Promise<void> {
  const { page, problems } = await openPage(`${base}/`);
  await page.waitForSelector('#model option', { state: 'attached' });
  assert.equal(await page.inputValue('#model'), 'smollm2-test');

  // Change parameters, ask for the token view, send with the keyboard.
  await page.fill('#temperature', '0');
  await page.fill('#max_tokens', '12');
  await page.fill('#seed', '11');
  await page.click('summary:has-text("Tokens")');
  await page.check('#logprobs');
  await watchAnswer(page);
  await page.fill('#prompt', 'Write a long story about a dragon.');
  const request = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
  await page.press('#prompt', 'Control+Enter');
  const body = (await request).postDataJSON();
  assert.equal(body.temperature, 0);
  assert.equal(body.max_tokens, 12);
  assert.equal(body.seed, 11);
  assert.equal(body.logprobs, true);
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.deepEqual(body.messages, [{ role: 'user', content: 'Write a long story about a dragon.' }]);
  await page.locator('#stats', { hasText: 'TTFT' }).waitFor();

  const stats = await page.textContent('#stats');
  assert.match(stats!, /TTFT \d+ ms · [\d.]+ tok\/s · 12 tokens · prompt \d+ \(cached \d+\) · length/);
  const answer = await page.textContent('#messages .message.assistant .content');
  assert.ok(answer!.length > 0);
  const lengths = await page.evaluate(() => window.lengths);
  const partial = new Set(lengths.filter((n) => n > 0 && n < answer!.length));
  assert.ok(partial.size >= 2, `text arrived in pieces (lengths seen: ${lengths.join(',')})`);
  assert.equal(await page.locator('#messages .message.assistant .token').count(), 12, 'one span per token');
  assert.deepEqual(problems, []);
  await page.close();
}

test('playground over HTTP: streamed chat with the parameters set, stats, token view', LIMIT, async () => {
  await chatOnce(h.url);
});

test(
  'playground: conversation kept across reloads, raw completion mode, the server error shown',
  LIMIT,
  async () => {
    const { page, problems } = await openPage(`${h.url}/`);
    await page.waitForSelector('#messages .message.assistant');
    assert.equal(
      await page.locator('#messages .message').count(),
      2,
      "the first test's conversation is back",
    );

    await page.click('#new-conversation');
    assert.equal(await page.locator('#messages .message').count(), 0);
    await page.check('input[name="mode"][value="completion"]');
    await page.fill('#max_tokens', '4');
    await page.fill('#prompt', 'Once upon a time');
    const body = await sendAndWait(page, '/v1/completions');
    assert.equal(body.prompt, 'Once upon a time');
    assert.equal(body.max_tokens, 4);
    assert.match((await page.textContent('#stats'))!, /4 tokens/);
    assert.equal(await page.isHidden('#error'), true);

    // A value the server refuses: its own message is what the user reads.
    await page.fill('#temperature', '5');
    await page.fill('#prompt', 'Hello');
    await sendAndWait(page, '/v1/completions');
    assert.equal(await page.isVisible('#error'), true);
    assert.match((await page.textContent('#error'))!, /temperature/);
    assert.equal(await page.getAttribute('#error', 'role'), 'alert');
    await page.fill('#temperature', '0.7');

    // Export as curl: the request the page would send.
    await page.click('#export-curl');
    const curl = await page.inputValue('#export-text');
    assert.match(curl, /^curl -N 'http:\/\/127\.0\.0\.1:\d+\/v1\/completions'/);
    // …and it runs: the same streamed completion from the shell.
    // (asynchronously: the server that answers it runs in this process)
    const { stdout: streamed } = await execFileAsync('bash', [
      '-c',
      curl.replace(/^curl -N/, 'curl -sS -N --max-time 30'),
    ]);
    assert.match(streamed, /^data: \{"id":"cmpl-/m);
    assert.match(streamed, /^data: \[DONE\]/m);
    await page.click('#export-dialog button[value="close"]');

    // Export as JSON: the conversation, its settings and the request.
    await page.click('#export-json');
    const exported = JSON.parse(await page.inputValue('#export-text'));
    assert.equal(exported.settings.mode, 'completion');
    assert.equal(exported.messages[0].content, 'Once upon a time');
    assert.equal(exported.request.path, '/v1/completions');
    assert.equal(exported.request.body.prompt, 'Hello');
    await page.click('#export-dialog button[value="close"]');

    // Stop ends a long answer early.
    await page.fill('#max_tokens', '400');
    await page.fill('#prompt', 'Write a long story about a dragon.');
    await page.click('#send');
    await page.locator('#stats', { hasText: 'so far' }).waitFor();
    await page.click('#stop');
    await page.locator('#stats', { hasText: 'stopped by you' }).waitFor();
    assert.equal(await page.isHidden('#error'), true);
    assert.equal(await page.locator('#conversation-list li').count(), 2);
    assert.deepEqual(
      problems.filter((p) => !p.includes('status of 400')),
      [],
    );
    await page.close();
  },
);

/** Form controls of the page that have no label (the `labels` of the control, or aria-label). */
async function unlabelled(page: Page): Promise<string[]> {
  return page.$$eval('input, select, textarea', (els) =>
    (
      els as unknown as {
        id: string;
        labels: ArrayLike<unknown> | null;
        getAttribute(n: string): string | null;
      }[]
    )
      .filter((e) => (e.labels?.length ?? 0) === 0 && !e.getAttribute('aria-label'))
      .map((e) => e.id || '(no id)'),
  );
}

test(
  'playground fits a phone-sized window; every control is labelled and the keyboard reaches the prompt',
  LIMIT,
  async () => {
    const { page, problems } = await openPage(`${h.url}/`);
    assert.deepEqual(await unlabelled(page), []);
    await page.keyboard.press('Tab'); // the skip link comes first
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'prompt');
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no horizontal scrolling (overflow ${overflow}px)`);
    const box = (await page.locator('#prompt').boundingBox())!;
    assert.ok(box.width > 300 && box.x >= 0, 'the prompt spans the screen');
    assert.deepEqual(problems, []);
    await page.close();
  },
);

test('dashboard: the request count rises after a request; charts are drawn', LIMIT, async () => {
  const { page, problems } = await openPage(`${h.managementUrl}/dashboard?interval=300`);
  await page.locator('#requests-total', { hasText: /^\d/ }).waitFor();
  const before = await count(page);
  const res = await postJson(`${h.url}/v1/completions`, { prompt: 'Hi', max_tokens: 3 });
  assert.equal(res.status, 200);
  await waitUntil(async () => (await count(page)) > before, 'the request count rises');
  assert.equal(await page.locator('.chart canvas').count(), 6);
  assert.match((await page.textContent('#families'))!, /openai/);
  assert.match((await page.textContent('#models'))!, /smollm2-test — base model/);
  assert.deepEqual(await unlabelled(page), []);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(100); // the charts follow the window's resize event
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the dashboard fits a phone-sized window (overflow ${overflow}px)`);
  assert.deepEqual(problems, []);
  await page.close();
});

test(
  'over HTTPS with mutual TLS: the playground streams and the dashboard reads its numbers',
  LIMIT,
  async () => {
    assert.match(tls.url('service'), /^https:/);
    await chatOnce(tls.url('service'));
    const { page, problems } = await openPage(`${tls.url('management')}/dashboard?interval=300`);
    await waitUntil(async () => (await count(page)) > 0, 'the dashboard shows requests');
    assert.deepEqual(problems, []);
    await page.close();
  },
);

/**
 * Structured output and tools against the real server: the page sends OpenAI's shapes, and
 * shows either the answer or — while this build refuses the feature — the server's own message.
 */
test(
  "playground: JSON schema and tools requests; an answer or the server's refusal is shown",
  LIMIT,
  async () => {
    const { page, problems } = await openPage(`${h.url}/`);
    await page.click('#new-conversation');
    await page.check('input[name="mode"][value="chat"]'); // the previous test left raw completion on
    await page.fill('#max_tokens', '8');
    await page.click('summary:has-text("Structured output")');
    await page.selectOption('#response_format', 'json_schema');
    assert.equal(await page.textContent('#schema-status'), 'valid JSON');
    await page.fill('#schema', '{"type":"object"');
    assert.match((await page.textContent('#schema-status'))!, /^not valid JSON/);
    await page.fill('#prompt', 'Describe the sea.');
    await page.click('#send');
    assert.match((await page.textContent('#error'))!, /^JSON schema: not valid JSON/);
    assert.equal(await page.locator('#messages .message').count(), 0, 'nothing sent, nothing added');
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    await page.fill('#schema', JSON.stringify(schema));

    for (const feature of ['response_format', 'tools'] as const) {
      if (feature === 'tools') {
        await page.selectOption('#response_format', 'text');
        await page.click('summary:has-text("Tools")');
        await page.check('#tools_on');
      }
      const replied = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
      await page.fill('#prompt', 'What is the weather in Oslo?');
      const body = await sendAndWait(page, '/v1/chat/completions');
      if (feature === 'response_format')
        assert.deepEqual(body.response_format, {
          type: 'json_schema',
          json_schema: { name: 'answer', schema },
        });
      else {
        assert.equal((body.tools as { function: { name: string } }[])[0].function.name, 'get_weather');
        assert.equal(body.tool_choice, 'auto');
      }
      const res = await replied;
      if (res.status() >= 400) {
        const message = ((await res.json()) as { error: { message: string } }).error.message;
        assert.equal(await page.textContent('#error'), message, `${feature}: the server's message, verbatim`);
        problems.splice(
          0,
          problems.length,
          ...problems.filter((p) => !p.includes(`status of ${res.status()}`)),
        );
      } else {
        assert.equal(await page.isHidden('#error'), true, `${feature}: answered`);
      }
    }
    assert.deepEqual(problems, []);
    await page.close();
  },
);

/**
 * The flows whose server side is being built alongside (API keys, adapters in /v1/models, tool
 * calls), checked against OpenAI's documented shapes: here the test answers the page's
 * requests itself (playwright's request routing), so the page's half of each flow is tested
 * before the server's half exists.
 */
test(
  'playground against the OpenAI shapes: 401 asks for the key once, adapters listed, tool calls answered',
  LIMIT,
  async () => {
    const page = await browser.newPage();
    const seen: { path: string; auth: string | undefined; body: unknown }[] = [];
    const sse = (chunks: object[]): string =>
      chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
    const chunk = (delta: object, finish: string | null = null): object => ({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 0,
      model: 'smollm2-test',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    await page.route(/\/v1\/(models|chat\/completions)$/, async (route) => {
      const req = route.request();
      const path = new URL(req.url()).pathname;
      const auth = req.headers()['authorization'];
      seen.push({ path, auth, body: req.postDataJSON() });
      if (auth !== 'Bearer k-123') {
        return route.fulfill({
          status: 401,
          contentType: 'application/json',
          body: JSON.stringify({
            error: { message: 'invalid API key', type: 'invalid_request_error', code: 'invalid_api_key' },
          }),
        });
      }
      if (path === '/v1/models') {
        return route.fulfill({
          contentType: 'application/json',
          body: JSON.stringify({
            object: 'list',
            data: [
              { id: 'smollm2-test', object: 'model', parent: null },
              { id: 'sql-lora', object: 'model', parent: 'smollm2-test' },
            ],
          }),
        });
      }
      const turn = seen.filter((s) => s.path === '/v1/chat/completions' && s.auth === 'Bearer k-123').length;
      const body =
        turn === 1
          ? sse([
              chunk({ role: 'assistant', content: null }),
              chunk({
                tool_calls: [
                  {
                    index: 0,
                    id: 'call_7',
                    type: 'function',
                    function: { name: 'get_weather', arguments: '' },
                  },
                ],
              }),
              chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Oslo"}' } }] }),
              chunk({}, 'tool_calls'),
            ])
          : sse([
              chunk({ role: 'assistant', content: '' }),
              chunk({ content: 'It is 21 °C in Oslo.' }),
              chunk({}, 'stop'),
            ]);
      return route.fulfill({ contentType: 'text/event-stream', body });
    });
    await page.goto(`${h.url}/`); // a new tab: its session storage holds no key

    // The model list answers 401: the key dialog opens once, and the retry carries the key.
    await page.locator('#key-dialog').waitFor();
    assert.match((await page.textContent('#key-reason'))!, /invalid API key/);
    await page.fill('#key-input', 'k-123');
    await page.click('#key-dialog button[value="ok"]');
    await page.waitForSelector('#model option[value="sql-lora"]', { state: 'attached' });
    assert.equal(
      await page.textContent('#model option[value="sql-lora"]'),
      'sql-lora (adapter of smollm2-test)',
    );
    assert.equal(await page.evaluate(() => sessionStorage.getItem('prism.apiKey')), 'k-123');
    await page.selectOption('#model', 'sql-lora');

    // Step one: the model calls a tool; the page shows the call and a field for its result.
    await page.click('#new-conversation');
    await page.check('input[name="mode"][value="chat"]');
    await page.click('summary:has-text("Tools")');
    await page.check('#tools_on');
    await page.fill('#prompt', 'Weather in Oslo?');
    const first = await sendAndWait(page, '/v1/chat/completions');
    assert.equal(first.model, 'sql-lora');
    assert.equal(await page.textContent('.tool-call code'), 'get_weather({"city": "Oslo"})');
    // Step two: the result goes back as a `tool` message and the model answers.
    await page.getByLabel('Result of get_weather').fill('{"temperature_c": 21}');
    const second = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
    await page.click('button:has-text("Send tool results")');
    const body = (await second).postDataJSON();
    assert.deepEqual(body.messages.slice(-2), [
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            id: 'call_7',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city": "Oslo"}' },
          },
        ],
      },
      { role: 'tool', content: '{"temperature_c": 21}', tool_call_id: 'call_7' },
    ]);
    await page
      .locator('#messages .message.assistant .content', { hasText: 'It is 21 °C in Oslo.' })
      .waitFor();
    assert.equal(
      seen.filter((s) => s.auth === undefined).length,
      1,
      'asked once: later requests carry the key',
    );
    await page.close();
  },
);
