/**
 * Device selection end to end (issue 29): `prism serve --device ...` and the config's
 * backendType "cuda". A malformed device is a usage error; CUDA asked for where it cannot
 * run fails at start with the reason; on the CPU emulation of CUDA the server starts on
 * "cuda:0", says so in its startup line, /v1/status and /info, and answers an OpenAI chat
 * request (scripts/device-check.sh does the same on a GPU); `--cuda-kernels` picks the decode
 * kernels (a usage error for another name, refused for a CPU engine).
 */
import { cudaTestLibrary } from './test-library.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServeProcess } from '../../bench/soak/serve-process.js';
import { projectRoot } from '../../engine/default-model.js';
import { ensureFixtures } from '../../test/fixtures.js';

const root = projectRoot();
let dir: string;
/** The CPU emulation build, or PRISM_TEST_CUDA_LIBRARY (a GPU build, scripts/device-check.sh). */
let library: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prism-cuda-serve-'));
  library = cudaTestLibrary();
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  delete process.env.PRISM_CUDA_LIBRARY;
});

function serve(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(root, 'cli', 'main.ts'), 'serve', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
}

test('--device takes cpu, cuda or cuda:N (a usage error otherwise)', () => {
  const r = serve(['--device', 'gpu']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--device: must be cpu, cuda or cuda:N, got 'gpu'/);
});

test('--cuda-kernels takes legacy or fast, and needs a CUDA device', () => {
  const bad = serve(['--cuda-kernels', 'turbo']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--cuda-kernels: must be legacy or fast, got 'turbo'/);
  const model = ensureFixtures().find((f) => f.name === 'llama-q8_0')!.path;
  const cpu = serve([
    '--device',
    'cpu',
    '--cuda-kernels',
    'fast',
    '--model',
    model,
    '--port',
    '0',
    '--management-port',
    '0',
  ]);
  assert.equal(cpu.status, 1, cpu.stderr);
  assert.match(cpu.stderr, /cudaKernels: chooses CUDA kernels, but the engine runs on the CPU/);
});

test('--device cuda where CUDA cannot run: exit 1 with the reason', () => {
  const model = ensureFixtures().find((f) => f.name === 'llama-q8_0')!.path;
  const r = serve(['--device', 'cuda', '--model', model, '--port', '0', '--management-port', '0'], {
    PRISM_CUDA_LIBRARY: join(dir, 'libprism_cuda.so'),
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /device cuda:0: CUDA cannot be used on this machine \(cannot load the CUDA backend/);
  assert.match(r.stderr, /--device cpu/);
});

test(
  'backendType "cuda" in config.json: serves on cuda:0 (fast kernels) and says so',
  { timeout: 15 * 60_000 },
  async () => {
    const model = ensureFixtures().find((f) => f.name === 'llama-q8_0')!.path;
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        ServerConfig: { httpsEnabled: false },
        BackendConfig: {
          npuDeviceIds: [[0]],
          ModelDeployConfig: {
            maxSeqLen: 256,
            maxInputTokenLen: 128,
            ModelConfig: [{ modelName: 'tiny-gpu', modelWeightPath: model, backendType: 'cuda' }],
          },
          ScheduleConfig: { maxBatchSize: 2, maxPrefillTokens: 128, cacheBlockSize: 16 },
        },
      }),
    );
    process.env.PRISM_CUDA_LIBRARY = library;
    // The fast kernel set (the fused decode layer) answers over HTTP too.
    const server = await startServeProcess(['--config', config, '--cuda-kernels', 'fast'], 10 * 60_000);
    try {
      assert.match(server.stderr(), /engine: tiny-gpu \(.*\) on cuda:0 \(/);
      assert.match(server.stderr(), /memory: .* on cuda:0/);
      const status = (await (await fetch(`${server.managementUrl}/v1/status`)).json()) as {
        service: { device: string; deviceName: string };
      };
      assert.equal(status.service.device, 'cuda:0');
      assert.ok(status.service.deviceName.length > 0);
      const info = (await (await fetch(`${server.url}/info`)).json()) as { model_device_type: string };
      assert.equal(info.model_device_type, 'cuda');
      const r = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny-gpu',
          messages: [{ role: 'user', content: 'Hello there' }],
          max_tokens: 3,
          ignore_eos: true,
        }),
      });
      assert.equal(r.status, 200);
      const body = (await r.json()) as {
        choices: { message: { content: string } }[];
        usage: { completion_tokens: number };
      };
      assert.equal(body.usage.completion_tokens, 3);
      assert.equal(typeof body.choices[0]!.message.content, 'string');
    } finally {
      assert.equal(await server.stop(), 0);
    }
  },
);
