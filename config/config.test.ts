/**
 * The config loader, rule by rule: defaults and bounds of mindie-compat.md §2, unknown
 * fields, cross-field rules, plugin_params, the deprecated enablePrefixCache, file size, and
 * the mapping onto the engine core's EngineOptions.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { resolveEngineOptions } from '../engine/options.js';
import {
  chatTemplatePath,
  engineOptionsFromConfig,
  modelPathFromConfig,
  toolCallParsers,
} from './engine-options.js';
import {
  ConfigError,
  defaultConfig,
  loadConfig,
  loadConfigFile,
  MAX_CONFIG_BYTES,
  validateConfig,
} from './load.js';
import { parsePluginParams } from './plugin-params.js';

const noEnv = { env: {} };
const tmp = mkdtempSync(join(tmpdir(), 'prism-config-'));

/** Validates `json` and returns the list of problems ([] when valid). */
function issuesOf(json: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    validateConfig(json, 'test.json', { env });
    return [];
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    return [...e.issues];
  }
}

function sched(fields: Record<string, unknown>, deployFields?: Record<string, unknown>): unknown {
  return {
    BackendConfig: { ScheduleConfig: fields, ...(deployFields ? { ModelDeployConfig: deployFields } : {}) },
  };
}
function deploy(fields: Record<string, unknown>): unknown {
  return { BackendConfig: { ModelDeployConfig: fields } };
}
function model(fields: Record<string, unknown>): unknown {
  return deploy({ ModelConfig: [fields] });
}

function assertIssue(json: unknown, expected: string | RegExp): void {
  const issues = issuesOf(json);
  const hit = issues.some((i) => (typeof expected === 'string' ? i === expected : expected.test(i)));
  assert.ok(hit, `expected an issue ${String(expected)}; got:\n${issues.join('\n') || '(none: valid)'}`);
}

describe('defaults (mindie-compat.md §2)', () => {
  const c = validateConfig({}, 'empty.json', noEnv).file;
  test('ServerConfig', () => {
    const s = c.ServerConfig;
    assert.equal(s.ipAddress, '127.0.0.1');
    assert.equal(s.managementIpAddress, '127.0.0.2');
    assert.deepEqual([s.port, s.managementPort, s.metricsPort], [1025, 1026, 1027]);
    assert.equal(s.maxLinkNum, 1000);
    assert.equal(s.httpsEnabled, true);
    assert.equal(s.inferMode, 'standard');
    assert.equal(s.openAiSupport, 'vllm');
    assert.deepEqual([s.tokenTimeout, s.e2eTimeout, s.maxRequestLength], [600, 600, 40]);
    assert.deepEqual(s.tlsCaFile, ['ca.pem']);
    assert.equal(s.tlsPk, 'security/keys/server.key.pem');
    assert.equal(s.HealthCheckConfig.npuUsageThreshold, 10);
  });
  test('ModelDeployConfig and ModelConfig', () => {
    const d = c.BackendConfig.ModelDeployConfig;
    assert.deepEqual([d.maxSeqLen, d.maxInputTokenLen, d.truncation], [2560, 2048, 0]);
    const m = d.ModelConfig[0];
    assert.equal(m.modelName, 'llama_65b');
    assert.deepEqual([m.worldSize, m.cpuMemSize, m.npuMemSize, m.backendType], [4, 0, -1, 'atb']);
    assert.deepEqual([d.maxLoras, d.maxLoraRank, d.LoraModules.length], [0, 0, 0]);
  });
  test('ScheduleConfig', () => {
    const s = c.BackendConfig.ScheduleConfig;
    assert.equal(s.cacheBlockSize, 128);
    assert.equal(s.maxPrefillBatchSize, 50);
    assert.equal(s.maxPrefillTokens, 8192);
    assert.equal(s.maxBatchSize, 200);
    assert.equal(s.maxIterTimes, 512);
    assert.equal(s.maxQueueDelayMicroseconds, 5000);
    assert.equal(s.maxFirstTokenWaitTime, 2500);
    assert.equal(s.maxN, 128);
    assert.deepEqual([s.prefillTimeMsPerReq, s.decodeTimeMsPerReq, s.maxPreemptCount], [150, 50, 0]);
  });
  test('BackendConfig and LogConfig', () => {
    assert.equal(c.BackendConfig.tokenizerProcessNumber, 8);
    assert.equal(c.BackendConfig.modelInstanceNumber, 1);
    assert.deepEqual(c.BackendConfig.npuDeviceIds, [[0, 1, 2, 3]]);
    assert.equal(c.LogConfig.logLevel, 'Info');
    assert.equal(c.Version, '1.0.0');
  });
  test('a config file without plugin_params has the prefix cache off', () => {
    assert.equal(validateConfig({}, 'empty.json', noEnv).plugins.prefixCache, false);
  });
  test('no config file: prefix cache on, plain HTTP', () => {
    const d = defaultConfig(noEnv);
    assert.equal(d.source, undefined);
    assert.equal(d.plugins.prefixCache, true);
    assert.equal(d.file.ServerConfig.httpsEnabled, false);
    assert.deepEqual(loadConfig(undefined, noEnv).plugins, d.plugins);
  });
});

describe('bounds: errors name the JSON path and the rule', () => {
  const cases: [string, unknown, string | RegExp][] = [
    [
      'cacheBlockSize > 128',
      sched({ cacheBlockSize: 256 }),
      'BackendConfig.ScheduleConfig.cacheBlockSize: must be <= 128, got 256',
    ],
    [
      'cacheBlockSize < 1',
      sched({ cacheBlockSize: 0 }),
      /^BackendConfig\.ScheduleConfig\.cacheBlockSize: must be >= 1/,
    ],
    [
      'maxBatchSize > 819200',
      sched({ maxBatchSize: 819201 }),
      /ScheduleConfig\.maxBatchSize: must be <= 819200/,
    ],
    [
      'maxPrefillTokens > 4194304',
      sched({ maxPrefillTokens: 4194305 }),
      /ScheduleConfig\.maxPrefillTokens: must be <= 4194304/,
    ],
    [
      'maxQueueDelayMicroseconds < 500',
      sched({ maxQueueDelayMicroseconds: 499 }),
      /maxQueueDelayMicroseconds: must be >= 500/,
    ],
    [
      'maxQueueDelayMicroseconds > 1e6',
      sched({ maxQueueDelayMicroseconds: 1000001 }),
      /maxQueueDelayMicroseconds: must be <= 1000000/,
    ],
    [
      'maxFirstTokenWaitTime > 3600000',
      sched({ maxFirstTokenWaitTime: 3600001 }),
      /maxFirstTokenWaitTime: must be <= 3600000/,
    ],
    [
      'prefillTimeMsPerReq > 1000',
      sched({ prefillTimeMsPerReq: 1001 }),
      /prefillTimeMsPerReq: must be <= 1000/,
    ],
    ['maxN > 8192', sched({ maxN: 8193 }), /ScheduleConfig\.maxN: must be <= 8192/],
    [
      'prefillPolicyType must be 0',
      sched({ prefillPolicyType: 1 }),
      'BackendConfig.ScheduleConfig.prefillPolicyType: must be 0, got 1',
    ],
    ['decodePolicyType must be 0', sched({ decodePolicyType: 2 }), /decodePolicyType: must be 0/],
    ['templateType enum', sched({ templateType: 'Other' }), /templateType: must be one of "Standard", "Mix"/],
    ['integer type', sched({ maxBatchSize: 1.5 }), /ScheduleConfig\.maxBatchSize: must be integer/],
    [
      'maxInputTokenLen > 4194304',
      deploy({ maxInputTokenLen: 4194305 }),
      /maxInputTokenLen: must be <= 4194304/,
    ],
    ['maxSeqLen > 0', deploy({ maxSeqLen: 0 }), /ModelDeployConfig\.maxSeqLen: must be >= 1/],
    [
      'truncation values',
      deploy({ truncation: 2 }),
      /truncation: must be one of true, false, -1, 0, 1, got 2/,
    ],
    ['port < 1024', { ServerConfig: { port: 80 } }, 'ServerConfig.port: must be >= 1024, got 80'],
    [
      'managementPort > 65535',
      { ServerConfig: { managementPort: 70000 } },
      /ServerConfig\.managementPort: must be <= 65535/,
    ],
    [
      'maxLinkNum > 4096',
      { ServerConfig: { maxLinkNum: 5000 } },
      /ServerConfig\.maxLinkNum: must be <= 4096/,
    ],
    ['tokenTimeout > 3600', { ServerConfig: { tokenTimeout: 3601 } }, /tokenTimeout: must be <= 3600/],
    ['e2eTimeout > 65535', { ServerConfig: { e2eTimeout: 65536 } }, /e2eTimeout: must be <= 65535/],
    [
      'maxRequestLength > 100',
      { ServerConfig: { maxRequestLength: 101 } },
      /maxRequestLength: must be <= 100/,
    ],
    ['inferMode enum', { ServerConfig: { inferMode: 'x' } }, /inferMode: must be one of "standard", "dmi"/],
    [
      'tls file set of 1-3',
      { ServerConfig: { tlsCaFile: ['a', 'b', 'c', 'd'] } },
      /tlsCaFile: must NOT have more than 3 items/,
    ],
    [
      'npuUsageThreshold > 100',
      { ServerConfig: { HealthCheckConfig: { npuUsageThreshold: 101 } } },
      /HealthCheckConfig\.npuUsageThreshold: must be <= 100/,
    ],
    [
      'modelInstanceNumber > 10',
      { BackendConfig: { modelInstanceNumber: 11 } },
      /modelInstanceNumber: must be <= 10/,
    ],
    [
      'tokenizerProcessNumber > 32',
      { BackendConfig: { tokenizerProcessNumber: 33 } },
      /tokenizerProcessNumber: must be <= 32/,
    ],
    ['Version is 1.0.0', { Version: '2.0.0' }, 'Version: must be "1.0.0", got "2.0.0"'],
    [
      'modelName charset',
      model({ modelName: 'my model' }),
      /ModelConfig\[0\]\.modelName: must be 1-256 letters/,
    ],
    [
      'modelName cannot end with .',
      model({ modelName: 'model.' }),
      /ModelConfig\[0\]\.modelName: must be 1-256 letters/,
    ],
    ['modelName length', model({ modelName: 'a'.repeat(257) }), /ModelConfig\[0\]\.modelName: must be 1-256/],
    ['npuMemSize >= -1', model({ npuMemSize: -2 }), /ModelConfig\[0\]\.npuMemSize: must be >= -1/],
    [
      'backendType enum',
      model({ backendType: 'gpu' }),
      /backendType: must be one of "atb", "torch", "cpu", "cuda"/,
    ],
    [
      'plugin_params is a string',
      model({ plugin_params: { plugin_type: 'prefix_cache' } }),
      /plugin_params: must be string/,
    ],
    [
      'LoraModules name',
      deploy({ LoraModules: [{ name: '_x', path: '/a', baseModelName: 'm' }] }),
      /LoraModules\[0\]\.name: must be 1-256 letters, digits, '-' or '_'/,
    ],
    [
      'LoraModules absolute path',
      deploy({ LoraModules: [{ name: 'x', path: 'rel', baseModelName: 'm' }] }),
      /LoraModules\[0\]\.path: must be an absolute path/,
    ],
    [
      'LoraModules required fields',
      deploy({ LoraModules: [{ name: 'x' }] }),
      'BackendConfig.ModelDeployConfig.LoraModules[0].path: is required',
    ],
  ];
  for (const [name, json, expected] of cases) test(name, () => assertIssue(json, expected));

  test('values at the bounds are accepted', () => {
    assert.deepEqual(issuesOf(sched({ cacheBlockSize: 128, maxQueueDelayMicroseconds: 500 })), []);
    assert.deepEqual(
      issuesOf(sched({ cacheBlockSize: 16, maxBatchSize: 819200, maxPrefillBatchSize: 0 })),
      [],
    );
    assert.deepEqual(issuesOf({ ServerConfig: { port: 1024, managementPort: 65535 } }), []);
    assert.deepEqual(issuesOf(deploy({ truncation: true })), []);
  });

  test('unknown fields at every level', () => {
    assertIssue({ Foo: 1 }, 'Foo: unknown field (not in the config schema)');
    assertIssue(
      { ServerConfig: { prot: 1025 } },
      'ServerConfig.prot: unknown field (not in the config schema)',
    );
    assertIssue(
      sched({ maxBatchSzie: 1 }),
      'BackendConfig.ScheduleConfig.maxBatchSzie: unknown field (not in the config schema)',
    );
    assertIssue(
      model({ foo: 1 }),
      'BackendConfig.ModelDeployConfig.ModelConfig[0].foo: unknown field (not in the config schema)',
    );
    assertIssue(
      model({ models: { llama: { chat_tmpl: 'x' } } }),
      'BackendConfig.ModelDeployConfig.ModelConfig[0].models.llama.chat_tmpl: unknown field (not in the config schema)',
    );
  });

  test('every problem is reported at once', () => {
    const issues = issuesOf({
      Foo: 1,
      ServerConfig: { port: 1 },
      BackendConfig: { ScheduleConfig: { cacheBlockSize: 999 } },
    });
    assert.equal(issues.length, 3, issues.join('\n'));
  });

  test('the root must be an object', () => {
    assert.deepEqual(issuesOf([1, 2]), ['(root): must be a JSON object']);
  });
});

describe('cross-field rules', () => {
  test('maxPrefillTokens >= maxInputTokenLen (effective)', () => {
    assertIssue(
      sched({ maxPrefillTokens: 1024 }, { maxInputTokenLen: 2048 }),
      /ScheduleConfig\.maxPrefillTokens: must be >= BackendConfig\.ModelDeployConfig\.maxInputTokenLen \(effective 2048 .*got 1024/,
    );
    // The effective input limit is min(maxInputTokenLen, maxSeqLen - 1).
    assert.deepEqual(
      issuesOf({
        BackendConfig: {
          ScheduleConfig: { maxPrefillTokens: 1023, maxIterTimes: 512 },
          ModelDeployConfig: { maxSeqLen: 1024, maxInputTokenLen: 4096 },
        },
      }),
      [],
    );
  });
  test('maxPrefillBatchSize <= maxBatchSize', () => {
    assertIssue(
      sched({ maxBatchSize: 10, maxPrefillBatchSize: 11, maxN: 10 }),
      'BackendConfig.ScheduleConfig.maxPrefillBatchSize: must be <= BackendConfig.ScheduleConfig.maxBatchSize (10), got 11',
    );
  });
  test('maxIterTimes <= maxSeqLen', () => {
    assertIssue(
      { BackendConfig: { ScheduleConfig: { maxIterTimes: 3000 }, ModelDeployConfig: { maxSeqLen: 2560 } } },
      /ScheduleConfig\.maxIterTimes: must be <= BackendConfig\.ModelDeployConfig\.maxSeqLen \(2560\), got 3000/,
    );
  });
  test('maxN <= maxBatchSize', () => {
    assertIssue(
      sched({ maxBatchSize: 8, maxPrefillBatchSize: 8, maxN: 128 }),
      /ScheduleConfig\.maxN: must be <= BackendConfig\.ScheduleConfig\.maxBatchSize \(8\), got 128/,
    );
  });
});

/**
 * A field the user did not write never makes a valid file invalid: each default tied to
 * another field by a cross-field rule is derived from what the user wrote, while the same
 * value written by the user still trips the rule (the tests above).
 */
describe('derived defaults never trip a cross-field rule', () => {
  function resolved(json: unknown): ReturnType<typeof validateConfig>['file'] {
    return validateConfig(json, 'test.json', noEnv).file;
  }
  test('maxBatchSize alone: maxN = min(128, maxBatchSize), maxPrefillBatchSize = min(50, maxBatchSize)', () => {
    const s = resolved(sched({ maxBatchSize: 64 })).BackendConfig.ScheduleConfig;
    assert.deepEqual([s.maxBatchSize, s.maxN, s.maxPrefillBatchSize], [64, 64, 50]);
    const t = resolved(sched({ maxBatchSize: 8 })).BackendConfig.ScheduleConfig;
    assert.deepEqual([t.maxBatchSize, t.maxN, t.maxPrefillBatchSize], [8, 8, 8]);
  });
  test('maxN, maxPrefillBatchSize or maxPreemptCount above 200 alone: maxBatchSize is raised to hold it', () => {
    assert.equal(resolved(sched({ maxN: 300 })).BackendConfig.ScheduleConfig.maxBatchSize, 300);
    assert.equal(
      resolved(sched({ maxPrefillBatchSize: 250 })).BackendConfig.ScheduleConfig.maxBatchSize,
      250,
    );
    const p = resolved({
      BackendConfig: {
        ScheduleConfig: { maxPreemptCount: 400 },
        ModelDeployConfig: { ModelConfig: [{ cpuMemSize: 4 }] },
      },
    }).BackendConfig.ScheduleConfig;
    assert.equal(p.maxBatchSize, 400);
  });
  test('maxSeqLen alone: maxIterTimes = min(512, maxSeqLen)', () => {
    const c = resolved(deploy({ maxSeqLen: 256 }));
    assert.equal(c.BackendConfig.ScheduleConfig.maxIterTimes, 256);
    assert.equal(c.BackendConfig.ModelDeployConfig.maxSeqLen, 256);
  });
  test('maxIterTimes alone above 2560: maxSeqLen is raised to hold it', () => {
    const c = resolved(sched({ maxIterTimes: 3000 }));
    assert.equal(c.BackendConfig.ModelDeployConfig.maxSeqLen, 3000);
  });
  test('maxInputTokenLen (and maxSeqLen) alone: maxPrefillTokens = max(8192, effective input)', () => {
    const c = resolved(deploy({ maxSeqLen: 32768, maxInputTokenLen: 16384 }));
    assert.equal(c.BackendConfig.ScheduleConfig.maxPrefillTokens, 16384);
    assert.equal(
      resolved(deploy({ maxInputTokenLen: 4096 })).BackendConfig.ScheduleConfig.maxPrefillTokens,
      8192,
    );
  });
  test('maxPrefillTokens alone below 2048: maxInputTokenLen = min(2048, maxPrefillTokens)', () => {
    const c = resolved(sched({ maxPrefillTokens: 1024 }));
    assert.equal(c.BackendConfig.ModelDeployConfig.maxInputTokenLen, 1024);
  });
  test('no file value is changed, and an empty file keeps the plain defaults', () => {
    const c = resolved({});
    const s = c.BackendConfig.ScheduleConfig;
    assert.deepEqual(
      [s.maxBatchSize, s.maxN, s.maxPrefillBatchSize, s.maxIterTimes, s.maxPrefillTokens],
      [200, 128, 50, 512, 8192],
    );
    assert.deepEqual(
      [c.BackendConfig.ModelDeployConfig.maxSeqLen, c.BackendConfig.ModelDeployConfig.maxInputTokenLen],
      [2560, 2048],
    );
    const w = resolved(sched({ maxBatchSize: 64, maxN: 32 })).BackendConfig.ScheduleConfig;
    assert.deepEqual([w.maxBatchSize, w.maxN], [64, 32]);
  });
  test('maxPreemptCount > 0 still needs cpuMemSize written: swap space has no value to derive', () => {
    assertIssue(sched({ maxPreemptCount: 1 }), /maxPreemptCount: > 0 requires .*cpuMemSize > 0/);
  });
});

describe('cross-field rules (continued)', () => {
  test('maxPreemptCount <= maxBatchSize and needs cpuMemSize', () => {
    assertIssue(
      sched({ maxPreemptCount: 300, maxBatchSize: 200 }),
      /maxPreemptCount: must be <= BackendConfig\.ScheduleConfig\.maxBatchSize \(200\), got 300/,
    );
    assertIssue(
      sched({ maxPreemptCount: 1 }),
      /maxPreemptCount: > 0 requires BackendConfig\.ModelDeployConfig\.ModelConfig\[0\]\.cpuMemSize > 0/,
    );
    assert.deepEqual(
      issuesOf({
        BackendConfig: {
          ScheduleConfig: { maxPreemptCount: 1 },
          ModelDeployConfig: { ModelConfig: [{ cpuMemSize: 4 }] },
        },
      }),
      [],
    );
  });
  test('all-zero listen address needs allowAllZeroIpListening', () => {
    assertIssue(
      { ServerConfig: { ipAddress: '0.0.0.0' } },
      /ServerConfig\.ipAddress: binding all interfaces \(0\.0\.0\.0\) requires ServerConfig\.allowAllZeroIpListening = true/,
    );
    assert.deepEqual(issuesOf({ ServerConfig: { ipAddress: '0.0.0.0', allowAllZeroIpListening: true } }), []);
  });
  test('LoRA: static adapters and dynamic-loading limits, one rule at a time', () => {
    const lora = (m: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      deploy({ LoraModules: [{ name: 'a', path: '/srv/a', baseModelName: 'llama_65b', ...m }], ...extra });
    assert.deepEqual(issuesOf(lora({})), []);
    assertIssue(
      lora({ baseModelName: 'other' }),
      /LoraModules\[0\]\.baseModelName: must equal the served model's modelName 'llama_65b', got 'other'/,
    );
    assertIssue(lora({ baseModelName: 'x_' }), /LoraModules\[0\]\.baseModelName: must be 1-256 letters/);
    assertIssue(lora({ path: '/srv/../etc' }), /LoraModules\[0\]\.path: must not contain a '\.\.' component/);
    assertIssue(lora({ path: '/' + 'p'.repeat(4095) }), /LoraModules\[0\]\.path: must be at most 4095 bytes/);
    assertIssue(
      lora({ name: 'llama_65b' }),
      /LoraModules\[0\]\.name: must differ from the base model's modelName/,
    );
    assertIssue(
      deploy({
        LoraModules: [
          { name: 'a', path: '/srv/a', baseModelName: 'llama_65b' },
          { name: 'a', path: '/srv/b', baseModelName: 'llama_65b' },
        ],
      }),
      /LoraModules\[1\]\.name: 'a' is given twice/,
    );
    assertIssue(deploy({ maxLoras: 4 }), /maxLoraRank: must be > 0 when dynamic adapter loading is enabled/);
    assertIssue(deploy({ maxLoraRank: 16 }), /maxLoras: must be > 0 when dynamic adapter loading is enabled/);
    assert.deepEqual(issuesOf(deploy({ maxLoras: 4, maxLoraRank: 16 })), []);
    assertIssue(
      deploy({
        maxLoras: 1,
        maxLoraRank: 8,
        LoraModules: [
          { name: 'a', path: '/srv/a', baseModelName: 'llama_65b' },
          { name: 'b', path: '/srv/b', baseModelName: 'llama_65b' },
        ],
      }),
      /LoraModules: 2 adapters exceed maxLoras \(1\)/,
    );
    // maxCpuLoras (vLLM's max_cpu_loras): adapters loaded at once, sharing maxLoras slots.
    assertIssue(
      deploy({ maxLoras: 4, maxLoraRank: 8, maxCpuLoras: 2 }),
      /maxCpuLoras: 2 must be >= maxLoras \(4\)/,
    );
    assertIssue(deploy({ maxCpuLoras: 2 }), /maxCpuLoras: needs maxLoras > 0/);
    assert.deepEqual(issuesOf(deploy({ maxLoras: 2, maxLoraRank: 8, maxCpuLoras: 8 })), []);
    assertIssue(
      deploy({
        maxLoras: 1,
        maxLoraRank: 8,
        maxCpuLoras: 2,
        LoraModules: ['a', 'b', 'c'].map((name) => ({
          name,
          path: `/srv/${name}`,
          baseModelName: 'llama_65b',
        })),
      }),
      /LoraModules: 3 adapters exceed maxCpuLoras \(2\)/,
    );
  });
  test('features Prism does not have are refused, not ignored', () => {
    assertIssue(
      deploy({ ModelConfig: [{}, {}] }),
      /ModelConfig: a Prism engine serves exactly one model, got 2 entries/,
    );
    assertIssue(
      { ServerConfig: { inferMode: 'dmi' } },
      /ServerConfig\.inferMode: 'dmi' \(split prefill\/decode\) is not supported/,
    );
    assertIssue(
      { BackendConfig: { multiNodesInferEnabled: true } },
      /multiNodesInferEnabled: multi-node inference is not supported/,
    );
    assertIssue(
      { BackendConfig: { modelInstanceNumber: 2 } },
      /modelInstanceNumber: one Prism engine runs one model instance/,
    );
    assertIssue(model({ modelInstanceType: 'StandardMock' }), /modelInstanceType: 'StandardMock'/);
  });
});

describe('plugin_params', () => {
  const at = 'P';
  test('prefix_cache, alone and comma-joined with mtp', () => {
    assert.deepEqual(parsePluginParams('{"plugin_type":"prefix_cache"}', at).plugins, {
      prefixCache: true,
      mtp: false,
    });
    const both = parsePluginParams('{"plugin_type":"mtp,prefix_cache","num_speculative_tokens":1}', at);
    assert.deepEqual(both.errors, []);
    assert.deepEqual(both.plugins, { prefixCache: true, mtp: true, numSpeculativeTokens: 1 });
    assert.match(both.warnings[0], /'mtp' is accepted for compatibility but has no effect/);
    assert.deepEqual(
      parsePluginParams('{"plugin_type":" prefix_cache , mtp "}', at).plugins.prefixCache,
      true,
    );
  });
  test('absent or empty object: no plugins', () => {
    assert.deepEqual(parsePluginParams(undefined, at).plugins, { prefixCache: false, mtp: false });
    assert.deepEqual(parsePluginParams('{}', at), {
      plugins: { prefixCache: false, mtp: false },
      errors: [],
      warnings: [],
    });
  });
  test('unknown plugin names are rejected clearly', () => {
    assert.deepEqual(parsePluginParams('{"plugin_type":"la,prefix_cache"}', at).errors, [
      "P.plugin_type: unknown plugin 'la' (supported: prefix_cache, mtp)",
    ]);
    assert.match(parsePluginParams('{"plugin_type":"prefix_cache,"}', at).errors[0], /empty plugin name/);
    assert.match(
      parsePluginParams('{"plugin_type":"prefix_cache,prefix_cache"}', at).errors[0],
      /listed twice/,
    );
  });
  test('malformed values', () => {
    assert.match(
      parsePluginParams('{plugin_type:prefix_cache}', at).errors[0],
      /^P: must be a JSON object encoded as a string/,
    );
    assert.match(parsePluginParams('"prefix_cache"', at).errors[0], /^P: must encode a JSON object/);
    assert.match(parsePluginParams('{"plugin_type":1}', at).errors[0], /^P\.plugin_type: must be a string/);
    assert.match(
      parsePluginParams('{"plugin_type":"prefix_cache","extra":1}', at).errors[0],
      /^P\.extra: unknown key/,
    );
    assert.match(
      parsePluginParams('{"num_speculative_tokens":1}', at).errors.join('\n'),
      /P\.plugin_type: is required/,
    );
  });
  test('num_speculative_tokens', () => {
    assert.match(
      parsePluginParams('{"plugin_type":"mtp","num_speculative_tokens":0}', at).errors[0],
      /num_speculative_tokens: must be an integer in \[1, 16\], got 0/,
    );
    assert.match(
      parsePluginParams('{"plugin_type":"mtp","num_speculative_tokens":1.5}', at).errors[0],
      /must be an integer/,
    );
    assert.match(
      parsePluginParams('{"plugin_type":"prefix_cache","num_speculative_tokens":2}', at).errors[0],
      /only applies with plugin 'mtp'/,
    );
  });
  test('through the loader: the field path is named', () => {
    assertIssue(
      model({ plugin_params: '{"plugin_type":"turbo"}' }),
      "BackendConfig.ModelDeployConfig.ModelConfig[0].plugin_params.plugin_type: unknown plugin 'turbo' (supported: prefix_cache, mtp)",
    );
    const c = validateConfig(model({ plugin_params: '{"plugin_type":"prefix_cache"}' }), 't.json', noEnv);
    assert.equal(c.plugins.prefixCache, true);
  });
  test('ScheduleConfig.enablePrefixCache is accepted, ignored, with a deprecation notice', () => {
    const on = validateConfig(sched({ enablePrefixCache: true }), 't.json', noEnv);
    assert.equal(on.plugins.prefixCache, false, 'the deprecated flag must not turn the cache on');
    assert.match(on.warnings.join('\n'), /enablePrefixCache is deprecated and ignored/);
    const off = validateConfig(
      {
        BackendConfig: {
          ScheduleConfig: { enablePrefixCache: false },
          ModelDeployConfig: { ModelConfig: [{ plugin_params: '{"plugin_type":"prefix_cache"}' }] },
        },
      },
      't.json',
      noEnv,
    );
    assert.equal(off.plugins.prefixCache, true, 'nor turn it off');
  });
});

describe('files', () => {
  test('size must be in (0, 10 MB]', () => {
    const empty = join(tmp, 'empty.json');
    writeFileSync(empty, '');
    assert.throws(
      () => loadConfigFile(empty),
      (e: unknown) => e instanceof ConfigError && /size must be in \(0, 10 MB\].*got 0 bytes/.test(e.message),
    );
    const big = join(tmp, 'big.json');
    writeFileSync(big, `{"LogConfig":{"logPath":"x"}}${' '.repeat(MAX_CONFIG_BYTES)}`);
    assert.throws(() => loadConfigFile(big), /size must be in \(0, 10 MB\]/);
  });
  test('missing file and bad JSON', () => {
    assert.throws(() => loadConfigFile(join(tmp, 'nope.json')), /cannot read/);
    const bad = join(tmp, 'bad.json');
    writeFileSync(bad, '{"Version": "1.0.0",');
    assert.throws(() => loadConfigFile(bad), /not valid JSON/);
  });
  test('the example config loads; paths resolve against its folder', () => {
    const example = fileURLToPath(new URL('./example.config.json', import.meta.url));
    const c = loadConfigFile(example, noEnv);
    assert.equal(c.plugins.prefixCache, true);
    assert.equal(
      modelPathFromConfig(c),
      fileURLToPath(new URL('../models/SmolLM2-135M-Instruct.Q4_1.gguf', import.meta.url)),
    );
  });
  test('environment overrides the listen addresses (and is validated)', () => {
    const c = validateConfig({}, 't.json', {
      env: { MIES_CONTAINER_IP: '10.0.0.5', MIES_CONTAINER_MANAGEMENT_IP: '10.0.0.6' },
    });
    assert.equal(c.file.ServerConfig.ipAddress, '10.0.0.5');
    assert.equal(c.file.ServerConfig.managementIpAddress, '10.0.0.6');
    assert.match(issuesOf({}, { MIES_CONTAINER_IP: '0.0.0.0' }).join('\n'), /allowAllZeroIpListening/);
  });
});

describe('mapping to EngineOptions', () => {
  test('every scheduling field reaches the engine, and the engine accepts it', () => {
    const file = join(tmp, 'full.json');
    writeFileSync(
      file,
      JSON.stringify({
        ServerConfig: { maxLinkNum: 50 },
        BackendConfig: {
          ModelDeployConfig: {
            maxSeqLen: 4096,
            maxInputTokenLen: 3000,
            truncation: true,
            ModelConfig: [
              {
                modelName: 'm1',
                npuMemSize: 2,
                plugin_params: '{"plugin_type":"prefix_cache"}',
                models: {
                  llama: { chat_template: 'tmpl.jinja', tool_call_options: { tool_call_parser: 'llama3_1' } },
                },
              },
            ],
          },
          ScheduleConfig: {
            cacheBlockSize: 64,
            maxBatchSize: 16,
            maxPrefillBatchSize: 4,
            maxPrefillTokens: 4096,
            maxIterTimes: 1024,
            maxN: 8,
          },
        },
      }),
    );
    const c = loadConfigFile(file, noEnv);
    const o = engineOptionsFromConfig(c, 'llama');
    assert.deepEqual(o, {
      maxBatchSize: 16,
      maxPrefillTokens: 4096,
      maxPrefillBatchSize: 4,
      cacheBlockSize: 64,
      maxSeqLen: 4096,
      maxInputTokenLen: 3000,
      truncation: -1,
      maxIterTimes: 1024,
      maxN: 8,
      maxQueueSize: 100,
      prefixCache: true,
      kvCacheBytes: 2 * 1024 ** 3,
      chatTemplatePath: join(tmp, 'tmpl.jinja'),
      toolCallParsers: { llama: 'llama3_1' },
      modelName: 'm1',
    });
    const r = resolveEngineOptions(o);
    assert.equal(r.maxInputTokenLen, 3000);
    assert.equal(r.prefixCache, true);
  });
  test('defaults map to the engine defaults with the prefix cache on', () => {
    const o = engineOptionsFromConfig(defaultConfig(noEnv));
    assert.equal(o.prefixCache, true);
    assert.equal(o.modelName, undefined, 'no file: the model keeps its own name');
    const r = resolveEngineOptions(o);
    assert.deepEqual(
      [r.maxBatchSize, r.maxPrefillTokens, r.cacheBlockSize, r.maxSeqLen, r.maxInputTokenLen, r.maxIterTimes],
      [200, 8192, 128, 2560, 2048, 512],
    );
  });
  test('LoraModules, maxLoras and maxLoraRank reach the engine options', () => {
    const c = validateConfig(
      deploy({
        maxLoras: 4,
        maxLoraRank: 32,
        LoraModules: [{ name: 'sql', path: '/srv/lora/sql', baseModelName: 'llama_65b' }],
      }),
      '/etc/x.json',
    );
    assert.deepEqual(engineOptionsFromConfig(c).lora, {
      maxLoras: 4,
      maxLoraRank: 32,
      modules: [{ name: 'sql', path: '/srv/lora/sql' }],
    });
    assert.equal(engineOptionsFromConfig(defaultConfig(noEnv)).lora, undefined);
  });
  test('backendType cuda runs on the first of npuDeviceIds, npuMemSize is its KV budget', () => {
    const c = validateConfig(
      {
        BackendConfig: {
          npuDeviceIds: [[3, 1]],
          ModelDeployConfig: { ModelConfig: [{ backendType: 'cuda', npuMemSize: 40 }] },
        },
      },
      '/etc/x.json',
    );
    const o = engineOptionsFromConfig(c);
    assert.equal(o.device, 'cuda:3');
    assert.equal(o.kvCacheBytes, 40 * 1024 ** 3);
    assert.equal(engineOptionsFromConfig(defaultConfig(noEnv)).device, undefined, "MindIE's atb: the CPU");
  });
  test('KvEventsConfig reaches the engine options; an empty endpoint is off', () => {
    const c = validateConfig(
      { BackendConfig: { KvEventsConfig: { endpoint: 'tcp://*:5557', topic: 'kv@pod@m' } } },
      '/etc/x.json',
    );
    assert.deepEqual(engineOptionsFromConfig(c).kvEvents, { endpoint: 'tcp://*:5557', topic: 'kv@pod@m' });
    const noTopic = validateConfig(
      { BackendConfig: { KvEventsConfig: { endpoint: 'ipc:///run/kv' } } },
      '/x',
    );
    assert.deepEqual(engineOptionsFromConfig(noTopic).kvEvents, { endpoint: 'ipc:///run/kv' });
    assert.equal(engineOptionsFromConfig(defaultConfig(noEnv)).kvEvents, undefined);
    assert.throws(
      () => validateConfig({ BackendConfig: { KvEventsConfig: { endpoint: 'http://x:1' } } }, '/x'),
      /BackendConfig\.KvEventsConfig\.endpoint: must be '' \(off\), tcp:\/\/HOST:PORT/,
    );
  });
  test('chat_template: several model types need the served one to match', () => {
    const c = validateConfig(
      model({ models: { llama: { chat_template: '/a.jinja' }, qwen2: { chat_template: '/b.jinja' } } }),
      '/etc/x.json',
      noEnv,
    );
    assert.equal(chatTemplatePath(c, 'qwen2'), '/b.jinja');
    assert.throws(
      () => chatTemplatePath(c, 'qwen3'),
      /chat_template is set for several model types \(llama, qwen2\)/,
    );
  });
  test('tool_call_parser: every model type that sets one, empty ones left out', () => {
    const c = validateConfig(
      model({
        models: {
          deepseekv2: {
            tool_call_options: { tool_call_parser: 'deepseek_v31' },
            chat_template: '/v31.jinja',
          },
          qwen3: { tool_call_options: { tool_call_parser: '' } },
          llama: {},
        },
      }),
      '/etc/x.json',
      noEnv,
    );
    assert.deepEqual(toolCallParsers(c), { deepseekv2: 'deepseek_v31' });
  });
});

describe('Prism extensions: API keys and limits (ServerConfig)', () => {
  test('defaults: no keys, health and metrics open, every limit filled in', () => {
    const s = validateConfig({}, 'empty.json', noEnv).file.ServerConfig;
    assert.equal(s.apiKeys, undefined);
    assert.equal(s.openHealthAndMetrics, true);
    assert.deepEqual(s.limits, {
      maxJsonDepth: 64,
      maxArrayLength: 100000,
      maxMessages: 4096,
      maxTools: 256,
      maxHeaderBytes: 16384,
      maxHeaderCount: 100,
      headersTimeoutMs: 10000,
      requestTimeoutMs: 60000,
      keepAliveTimeoutMs: 5000,
    });
  });

  test('keys and limits are validated, naming the field', () => {
    assert.deepEqual(
      issuesOf({
        ServerConfig: { apiKeys: ['k1', 'k2'], managementApiKeyFile: 'keys.txt', limits: { maxTools: 8 } },
      }),
      [],
    );
    assertIssue(
      { ServerConfig: { apiKeys: ['has space'] } },
      /ServerConfig\.apiKeys\[0\]: must match pattern/,
    );
    assertIssue(
      { ServerConfig: { limits: { maxJsonDepth: 0 } } },
      /ServerConfig\.limits\.maxJsonDepth: must be >= 1/,
    );
    assertIssue(
      { ServerConfig: { limits: { maxHeaderCount: 5000 } } },
      /ServerConfig\.limits\.maxHeaderCount: must be <= 2000/,
    );
    assertIssue(
      { ServerConfig: { limits: { slowloris: 1 } } },
      /ServerConfig\.limits\.slowloris: unknown field/,
    );
  });
});
