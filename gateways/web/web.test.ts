/**
 * The web UI's routes on the real gateway (real engine behind gRPC): which `GET /` gets the
 * playground, caching and security headers, the dashboard on the management listener, and the
 * `prism` object of /metrics-json that the dashboard reads. The bundle is built first, as
 * `npm ci` does. The pages' behaviour in a browser is test/web-browser.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { getJson, postJson, startHarness, type Harness } from '../../test/gateways-harness.js';
import { CONTENT_SECURITY_POLICY } from './headers.js';
import { wantsHtml } from './index.js';

let h: Harness;

before(async () => {
  execFileSync(process.execPath, ['scripts/build-web.mjs'], { stdio: 'inherit' });
  h = await startHarness();
});

after(async () => {
  await h?.close();
});

const html = { Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

test('wantsHtml: text/html named with q > 0, not through a wildcard', () => {
  assert.equal(wantsHtml(html.Accept), true);
  assert.equal(wantsHtml('TEXT/HTML'), true);
  assert.equal(wantsHtml('*/*'), false);
  assert.equal(wantsHtml('text/*'), false);
  assert.equal(wantsHtml(''), false);
  assert.equal(wantsHtml('application/json'), false);
  assert.equal(wantsHtml('text/html;q=0'), false);
  assert.equal(wantsHtml('application/json, text/html;q=0.5'), true);
});

test('GET / with Accept: text/html is the playground, with CSP, ETag revalidation and hashed immutable assets', async () => {
  const res = await fetch(`${h.url}/`, { headers: html });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/html/);
  assert.equal(res.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
  assert.match(CONTENT_SECURITY_POLICY, /default-src 'none'/);
  assert.match(CONTENT_SECURITY_POLICY, /script-src 'self'(;|$)/);
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const etag = res.headers.get('etag')!;
  const page = await res.text();
  assert.match(page, /<title>Prism playground<\/title>/);
  assert.doesNotMatch(page, /https?:\/\//, 'the page references no other host');
  assert.doesNotMatch(page, /<script>|<script(?![^>]*\bsrc=)/, 'no inline script');
  const again = await fetch(`${h.url}/`, { headers: { ...html, 'If-None-Match': etag } });
  assert.equal(again.status, 304);

  const assets = [...page.matchAll(/(?:src|href)="(\/web\/assets\/[^"]+)"/g)].map((m) => m[1]);
  assert.equal(assets.length, 2, 'one script and one stylesheet');
  for (const path of assets) {
    assert.match(path, /-[A-Z0-9]{8}\.(js|css)$/, 'content-hashed name');
    const a = await fetch(`${h.url}${path}`);
    assert.equal(a.status, 200, path);
    assert.equal(a.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(a.headers.get('content-type')!, path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
    const body = await a.text();
    assert.doesNotMatch(body, /\beval\(|new Function\(/, 'nothing the CSP would block');
  }
  const missing = await fetch(`${h.url}/web/assets/nothing-12345678.js`);
  assert.equal(missing.status, 404);
  assert.match(
    ((await missing.json()) as { error: string }).error,
    /no web asset named nothing-12345678\.js/,
  );
});

test('GET / without HTML in Accept keeps its meaning (405, Allow: POST); POST / is still TGI', async () => {
  for (const accept of ['*/*', 'application/json', '']) {
    const res = await fetch(`${h.url}/`, { headers: accept ? { Accept: accept } : {} });
    assert.equal(res.status, 405, accept);
    assert.equal(res.headers.get('allow'), 'POST');
  }
  const tgi = await postJson(`${h.url}/`, { inputs: 'Hello', parameters: { max_new_tokens: 2 } });
  assert.equal(tgi.status, 200);
  assert.ok(Array.isArray(tgi.json));
  // The management listener has no playground; the service listener has no dashboard.
  assert.equal((await fetch(`${h.managementUrl}/`, { headers: html })).status, 404);
  assert.equal((await fetch(`${h.url}/dashboard`, { headers: html })).status, 404);
});

test('GET /dashboard on the management listener, with its own assets there', async () => {
  const res = await fetch(`${h.managementUrl}/dashboard`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
  const page = await res.text();
  assert.match(page, /<title>Prism dashboard<\/title>/);
  const script = /src="(\/web\/assets\/dashboard-[^"]+\.js)"/.exec(page)![1];
  assert.equal((await fetch(`${h.managementUrl}${script}`)).status, 200);
});

test("/metrics-json keeps MindIE's vector and adds the `prism` object; family counts rise per request", async () => {
  const before = (await getJson(`${h.managementUrl}/metrics-json`)).json;
  assert.equal(before.resultType, 'vector');
  assert.equal(before.result.length, 5);
  const p0 = before.prism;
  for (const key of ['received', 'succeeded', 'failed', 'running', 'waiting', 'preemptions', 'maxBatchSize'])
    assert.equal(typeof p0.requests[key], 'number', key);
  assert.equal(p0.kvBlocks.used + p0.kvBlocks.free, p0.kvBlocks.total);
  assert.equal(p0.latencySeconds.ttft.counts.length, p0.latencySeconds.ttft.bounds.length + 1);
  assert.deepEqual(Object.keys(p0.families).sort(), [
    'anthropic',
    'kserve',
    'llamacpp',
    'native',
    'ollama',
    'openai',
    'tei',
    'tgi',
    'vllm',
  ]);
  assert.deepEqual(p0.models, [{ id: 'smollm2-test', parent: null }]);

  const chat = await postJson(`${h.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 3,
  });
  assert.equal(chat.status, 200);
  const vllm = await postJson(`${h.url}/generate`, { prompt: 'Hi', max_tokens: 2 });
  assert.equal(vllm.status, 200);
  const bad = await postJson(`${h.url}/v1/completions`, { prompt: 'Hi', temperature: 9 });
  assert.equal(bad.status, 400);

  const p1 = (await getJson(`${h.managementUrl}/metrics-json`)).json.prism;
  assert.equal(p1.families.openai.requests, p0.families.openai.requests + 2);
  assert.equal(p1.families.openai.errors, p0.families.openai.errors + 1);
  assert.equal(p1.families.vllm.requests, p0.families.vllm.requests + 1);
  assert.equal(p1.families.tgi.requests, p0.families.tgi.requests);
  assert.ok(p1.requests.received >= p0.requests.received + 2);
  assert.ok(p1.tokens.generation > p0.tokens.generation);
  assert.ok(p1.latencySeconds.ttft.count >= p0.latencySeconds.ttft.count + 2);
  assert.ok(p1.time > p0.time);
});
