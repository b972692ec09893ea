/**
 * The playground and the dashboard in a real browser: Debian's chromium (scripts/ensure-chromium.sh
 * installs it; .ci/run calls that) driven by playwright-core, against the real server on the
 * default model, over plain HTTP and over HTTPS with mutual TLS. The page must stream an
 * answer token by token, show its stats, send the parameters the user set, keep the
 * conversation, show the server's error message, fit a phone-sized window, and the dashboard
 * must show a rising request count. On the default (text) model the image attach control is
 * disabled, saying why; on the SmolVLM fixture (test/vision/) an attached PNG is sent as an
 * `image_url` part and answered.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import sharp from 'sharp';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { makeCa, makeCert } from './certs.js';
import { fixture } from './fixtures.js';
import { freePortConfig, getJson, postJson, startHarness, type Harness } from './gateways-harness.js';

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
  getElementById(id: string): { dispatchEvent(event: object): void } | null;
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare class DataTransfer {
  readonly items: { add(file: object): void };
}
declare class File {
  constructor(bits: object[], name: string, options: { type: string });
}
declare class ClipboardEvent {
  constructor(type: string, init: { clipboardData: DataTransfer; bubbles: boolean; cancelable: boolean });
}
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

test(
  'playground on a text model: the attach control is disabled saying why, and absent in raw completion',
  LIMIT,
  async () => {
    const card = (await getJson(`${h.url}/v1/models/smollm2-test`)).json;
    assert.deepEqual(card.input_modalities, ['text']);
    assert.equal(card.max_image_bytes, undefined);
    const { page, problems } = await openPage(`${h.url}/`);
    await page.waitForSelector('#model option', { state: 'attached' });
    const mode = await page.inputValue('input[name="mode"]:checked'); // an earlier test's, restored below
    await page.check('input[name="mode"][value="completion"]');
    assert.equal(await page.isHidden('#attach-group'), true, 'no attach control in raw completion');
    await page.check('input[name="mode"][value="chat"]');
    assert.equal(await page.isVisible('#attach-button'), true);
    assert.equal(await page.isDisabled('#attach-button'), true);
    assert.equal(await page.isDisabled('#attach'), true);
    assert.equal(await page.textContent('#attach-help'), 'smollm2-test takes no images');
    assert.equal(await page.getAttribute('#attach-button', 'aria-describedby'), 'attach-help');
    await page.check(`input[name="mode"][value="${mode}"]`);
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

/**
 * Images on a vision model (the smolvlm-tiny fixture the vision tests serve): its card says it
 * takes them, the page refuses a file of another type itself, an attached PNG shows as a
 * removable thumbnail, goes out as an `image_url` data: URL before the text and is answered,
 * stays in the transcript and the next turn's history; the server's refusal of an image that
 * does not decode is shown in its own words.
 */
test(
  'playground on a vision model: attach a PNG, send it, see the answer; the server refusal shown',
  LIMIT,
  async () => {
    const model = 'smolvlm-tiny';
    const vision = await startHarness(undefined, { modelPath: fixture(model).path, modelName: model });
    try {
      const card = (await getJson(`${vision.url}/v1/models`)).json.data[0];
      assert.deepEqual(card.input_modalities, ['text', 'image']);
      assert.equal(card.max_image_bytes, 20 * 1024 * 1024);
      const png = await sharp({ create: { width: 48, height: 32, channels: 3, background: '#3a7' } })
        .png()
        .toBuffer();
      const { page, problems } = await openPage(`${vision.url}/`);
      await page.waitForSelector('#attach-button:not([disabled])');
      assert.match((await page.textContent('#attach-help'))!, /PNG, JPEG, WebP or GIF up to 20 MiB/);
      await page.fill('#temperature', '0');
      await page.fill('#max_tokens', '4');

      // Refused by the page: not an image type the server decodes.
      await page.setInputFiles('#attach', {
        name: 'notes.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('hi'),
      });
      assert.equal(
        await page.textContent('#error'),
        'notes.txt: not a PNG, JPEG, WebP or GIF image (text/plain)',
      );
      assert.equal(await page.isHidden('#attachments'), true);

      // Three attached (a file picked, one pasted into the prompt, one dropped on the composer),
      // two removed again.
      await page.setInputFiles('#attach', { name: 'first.png', mimeType: 'image/png', buffer: png });
      await page.waitForSelector('#attachments img[alt="Image 1: first.png"]');
      await page.evaluate((b64) => {
        const dt = new DataTransfer();
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
        document
          .getElementById('prompt')!
          .dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      }, png.toString('base64'));
      await page.waitForSelector('#attachments img[alt="Image 2: pasted.png"]');
      const dropped = await page.evaluateHandle((b64) => {
        const dt = new DataTransfer();
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
        return dt;
      }, png.toString('base64'));
      await page.dispatchEvent('#composer', 'drop', { dataTransfer: dropped });
      await page.waitForSelector('#attachments img[alt="Image 3: dropped.png"]');
      await page.click('button[aria-label="Remove image first.png"]');
      await page.click('button[aria-label="Remove image pasted.png"]');
      assert.deepEqual(
        await page.$$eval('#attachments img', (els) => els.map((e) => e.getAttribute('alt'))),
        ['Image 1: dropped.png'],
      );

      const url = `data:image/png;base64,${png.toString('base64')}`;
      await page.fill('#prompt', 'What is in this picture?');
      const body = await sendAndWait(page, '/v1/chat/completions');
      assert.deepEqual(body.messages, [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url } },
            { type: 'text', text: 'What is in this picture?' },
          ],
        },
      ]);
      await page.locator('#stats', { hasText: 'TTFT' }).waitFor();
      assert.equal(await page.isHidden('#error'), true);
      assert.ok((await page.textContent('#messages .message.assistant .content'))!.length > 0, 'an answer');
      assert.equal(await page.isHidden('#attachments'), true, 'the composer is emptied of the sent image');
      assert.equal(await page.getAttribute('#messages .message.user .thumbs img', 'src'), url);

      // The next turn sends the image again, as the history holds it; a reload keeps it.
      await page.fill('#prompt', 'And its colour?');
      const next = await sendAndWait(page, '/v1/chat/completions');
      assert.deepEqual((next.messages as { content: unknown }[])[0].content, body.messages[0].content);
      assert.equal((next.messages as { content: unknown }[])[2].content, 'And its colour?');
      assert.equal(await page.isHidden('#error'), true);
      await page.reload();
      await page.waitForSelector('#messages .message.user .thumbs img');

      // An image the server cannot decode: its 400, verbatim.
      await page.click('#new-conversation');
      await page.waitForSelector('#attach-button:not([disabled])');
      const bad = Buffer.concat([png.subarray(0, 16), Buffer.alloc(64, 0xff)]);
      await page.setInputFiles('#attach', { name: 'broken.png', mimeType: 'image/png', buffer: bad });
      await page.waitForSelector('#attachments img');
      await page.fill('#prompt', 'What is this?');
      const replied = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
      await sendAndWait(page, '/v1/chat/completions');
      const res = await replied;
      assert.equal(res.status(), 400);
      const message = ((await res.json()) as { error: { message: string } }).error.message;
      assert.match(message, /^messages\[0\]\.content\[0\]\.image_url: /);
      assert.equal(await page.textContent('#error'), message);
      assert.deepEqual(
        problems.filter((p) => !p.includes('status of 400')),
        [],
      );
      await page.close();
    } finally {
      await vision.close();
    }
  },
);
