/**
 * Executes the curl examples of the docs: every fenced block tagged `sh curl-test` in
 * docs/api.md and in README.md, against a gateway serving the default model under the name
 * `prism serve` gives it. The examples' addresses (127.0.0.1:1025/1026/1027) are replaced by
 * the test listeners' URLs; `curl -f` makes an HTTP error fail the example.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { adapterFixture } from './adapter-fixtures.js';
import { startHarness, type Harness } from './gateways-harness.js';

const run = promisify(execFile);
const SERVED_NAME = 'SmolLM2-135M-Instruct.Q4_1';

/** The bodies of the ```sh curl-test fenced blocks of a Markdown file. */
export function curlBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const re = /^```sh curl-test[^\n]*\n([\s\S]*?)^```/gm;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) blocks.push(m[1]);
  return blocks;
}

let h: Harness;
let demoAdapter: string;
before(async () => {
  // README's LoRA example loads /srv/lora/demo: a generated PEFT adapter stands in for it.
  demoAdapter = adapterFixture('default-qv').path;
  h = await startHarness(undefined, {
    modelName: SERVED_NAME,
    lora: { maxLoras: 2, maxLoraRank: 16, modules: [] },
  });
});
after(async () => {
  await h?.close();
});

async function runBlocks(file: string): Promise<void> {
  const blocks = curlBlocks(readFileSync(new URL(`../${file}`, import.meta.url), 'utf-8'));
  assert.ok(
    blocks.length > 0,
    `${file} has no \`\`\`sh curl-test blocks (the curl examples of docs/api.md belong there)`,
  );
  for (const block of blocks) {
    const script = block
      .replaceAll('http://127.0.0.1:1025', h.url)
      .replaceAll('http://127.0.0.1:1026', h.managementUrl)
      .replaceAll('http://127.0.0.1:1027', h.metricsUrl)
      .replaceAll('/srv/lora/demo', demoAdapter);
    const { stdout } = await run('bash', ['-e', '-o', 'pipefail', '-c', script], { timeout: 120000 }).catch(
      (err: { stderr?: string; code?: number }) => {
        throw new Error(`example failed (exit ${err.code}): ${block}\n${err.stderr ?? ''}`);
      },
    );
    assert.ok(stdout.trim().length > 0, `example printed nothing: ${block}`);
  }
}

test('docs/api.md curl examples run', async () => {
  await runBlocks('docs/api.md');
});

test('README.md curl examples run', async () => {
  await runBlocks('README.md');
});
