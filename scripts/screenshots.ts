/**
 * Saves screenshots of the playground and the dashboard into docs/images/ (shown in the
 * README): the real server on the default model, Debian's chromium through playwright-core,
 * a short chat with the token view, and a little concurrent traffic for the dashboard's charts.
 * Usage: npm run screenshots   (needs /usr/bin/chromium: scripts/ensure-chromium.sh)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { postJson, startHarness } from '../test/gateways-harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'docs', 'images');
mkdirSync(out, { recursive: true });
execFileSync(process.execPath, [join(here, 'build-web.mjs')], { stdio: 'inherit' });
const profile = mkdtempSync(join(tmpdir(), 'prism-shots-'));
const h = await startHarness();
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
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
  viewport: { width: 1360, height: 860 },
  colorScheme: 'light',
});
try {
  const page = await browser.newPage();
  await page.goto(`${h.url}/`);
  await page.waitForSelector('#model option', { state: 'attached' });
  await page.fill('#system', 'You are a concise assistant.');
  await page.fill('#temperature', '0.3');
  await page.fill('#seed', '42');
  await page.fill('#max_tokens', '48');
  await page.click('summary:has-text("Tokens")');
  await page.check('#logprobs');
  await page.fill('#prompt', 'Give me three tips for writing clear documentation.');
  await page.click('#send');
  await page.locator('#stats', { hasText: 'TTFT' }).waitFor({ timeout: 60_000 });
  await page.click('#messages .message.assistant details.tokens summary');
  await page.screenshot({ path: join(out, 'playground.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(out, 'playground-phone.png') });

  const dash = await browser.newPage();
  await dash.goto(`${h.managementUrl}/dashboard?interval=1000`);
  await dash.locator('#requests-total', { hasText: /^\d/ }).waitFor();
  // Waves of concurrent requests; the shared opening gives the prefix cache something to hit.
  const opening = 'You are reviewing a pull request for an inference server written in TypeScript. ';
  for (let wave = 0; wave < 6; wave++) {
    await Promise.all(
      Array.from({ length: 4 + (wave % 3) }, (_, i) =>
        postJson(`${h.url}/v1/completions`, {
          prompt: `${opening.repeat(12)}Comment ${wave}.${i}:`,
          max_tokens: 24 + 8 * (i % 3),
          temperature: 0.8,
        }),
      ),
    );
    await postJson(`${h.url}/generate`, { inputs: 'Hello', parameters: { max_new_tokens: 8 } });
    await dash.waitForTimeout(1000);
  }
  await dash.waitForTimeout(2500);
  await dash.screenshot({ path: join(out, 'dashboard.png'), fullPage: true });
  console.log(`screenshots saved in ${out}`);
} finally {
  await browser.close();
  await h.close();
  rmSync(profile, { recursive: true, force: true });
}
