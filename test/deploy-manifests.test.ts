/**
 * deploy/ checked offline (no cluster): deploy/validate.py lints and renders the Helm chart with
 * Helm's own library and validates every object, rendered or written, against the Kubernetes
 * OpenAPI schemas (kubernetes-validate, strict) and the CRDs' schemas (deploy/schemas/). This
 * test runs it in deploy/.venv (deploy/requirements.txt) and then checks Prism's side of what
 * it rendered: the ConfigMap's config.json passes Prism's own config loader, the containers'
 * arguments are `prism serve` flags, probes hit health routes on the serving port, the ports,
 * keys and labels the config names are the ones the pod exposes, mounts and carries.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serveOptions } from '../cli/serve.js';
import { validateConfig } from '../config/load.js';
import { projectRoot } from '../engine/default-model.js';
import { isHealthOrMetricsRoute } from '../gateways/server.js';
// @ts-expect-error -- a plain .mjs module without types
import { ensureVenv } from '../scripts/python-env.mjs';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type K8sObject = any;
interface Report {
  kubernetesVersion: string;
  helmSdk: string;
  checked: number;
  errors: string[];
  rendered: Record<string, K8sObject[]>;
  refusedValues: string[];
  kserve: Record<string, K8sObject[]>;
}

const root = projectRoot();
let python: string;
let report: Report;

function validatePy(args: string[] = []): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(python, ['deploy/validate.py', ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

before(() => {
  python = join(ensureVenv(root, 'deploy/.venv', 'deploy/requirements.txt') as string, 'python');
  const r = validatePy();
  assert.equal(r.status === 0 || r.status === 1, true, r.stderr);
  report = JSON.parse(r.stdout) as Report;
});

const byKind = (docs: K8sObject[], kind: string): K8sObject[] => docs.filter((d) => d.kind === kind);
const one = (docs: K8sObject[], kind: string): K8sObject => {
  const found = byKind(docs, kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0];
};

/** `prism serve` arguments as the CLI parses them (throws on an unknown flag). */
function serveArgs(args: string[]): Record<string, unknown> {
  assert.equal(args[0], 'serve');
  return parseArgs({ args: args.slice(1), options: serveOptions, strict: true, allowPositionals: false })
    .values;
}

function assertProbes(container: K8sObject, httpPort: number | string): void {
  for (const probe of ['readinessProbe', 'livenessProbe']) {
    const get = container[probe]?.httpGet;
    assert.ok(get, `${probe} is an HTTP GET`);
    assert.ok(
      isHealthOrMetricsRoute('GET', get.path),
      `${probe} ${get.path} is a health route (open without keys)`,
    );
    assert.ok(get.port === httpPort || get.port === 'http', `${probe} on the serving port`);
  }
}

test('every rendered object and KServe manifest is valid against the Kubernetes and CRD schemas', () => {
  assert.deepEqual(report.errors, []);
  assert.equal(report.kubernetesVersion, '1.33.0');
  assert.match(report.helmSdk, /^v4\./);
  assert.deepEqual(Object.keys(report.rendered).sort(), [
    'all-features.yaml',
    'central-indexer.yaml',
    'default',
  ]);
  assert.equal(
    report.checked,
    4 + 4 + 4 + 3,
    'objects checked: three renders of the chart, three KServe manifests',
  );
});

describe('the chart, as rendered', () => {
  for (const variant of ['default', 'all-features.yaml', 'central-indexer.yaml']) {
    test(`${variant}: config.json is a valid Prism config and the pod matches it`, () => {
      const docs = report.rendered[variant];
      const cm = one(docs, 'ConfigMap');
      const deployment = one(docs, 'Deployment');
      const pod = deployment.spec.template;
      const [container] = pod.spec.containers;
      const args = serveArgs(container.args);
      const mounts = new Map<string, string>(
        container.volumeMounts.map((m: K8sObject) => [m.mountPath, m.name] as [string, string]),
      );
      // --config names the ConfigMap's file through its mount.
      assert.equal(args.config, '/etc/prism/config/config.json');
      assert.equal(
        pod.spec.volumes.find((v: K8sObject) => v.name === mounts.get('/etc/prism/config')).configMap.name,
        cm.metadata.name,
      );
      const config = validateConfig(JSON.parse(cm.data['config.json']), args.config as string, { env: {} });
      const sc = config.file.ServerConfig;
      const ports = Object.fromEntries(container.ports.map((p: K8sObject) => [p.name, p.containerPort]));
      assert.deepEqual(
        [ports.http, ports.management, ports.metrics],
        [sc.port, sc.managementPort, sc.metricsPort],
      );
      assert.ok(sc.allowAllZeroIpListening && sc.ipAddress === '0.0.0.0', 'listeners bind the pod');
      // The management key file is in the mounted Secret.
      assert.ok(sc.managementApiKeyFile?.startsWith('/etc/prism/keys/'));
      const keys = pod.spec.volumes.find((v: K8sObject) => v.name === mounts.get('/etc/prism/keys'));
      const secretName = keys.secret.secretName;
      const secrets = byKind(docs, 'Secret');
      if (variant === 'all-features.yaml')
        assert.deepEqual([secretName, secrets.length], ['prism-management', 0]);
      else
        assert.ok(
          secrets[0].stringData['management-api-keys'].length >= 32 &&
            secrets[0].metadata.name === secretName,
        );
      assertProbes(container, 'http');
      assert.equal(container.startupProbe.httpGet.path, '/health');
      assert.equal(pod.metadata.labels['llm-d.ai/engine-type'], 'vllm');
      assert.deepEqual(
        container.env.find((e: K8sObject) => e.name === 'POD_IP').valueFrom.fieldRef.fieldPath,
        'status.podIP',
      );
      if (variant !== 'central-indexer.yaml') {
        assert.equal(pod.metadata.annotations['prometheus.io/port'], String(sc.metricsPort));
        assert.equal(pod.metadata.annotations['prometheus.io/path'], '/metrics');
      } else assert.equal(pod.metadata.annotations['prometheus.io/scrape'], undefined);
      // The Service selects the pods and names their ports.
      const svc = one(docs, 'Service');
      for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(pod.metadata.labels[k], v);
      const kv = config.file.BackendConfig.KvEventsConfig.endpoint;
      if (kv.startsWith('tcp://*:')) {
        assert.equal(
          ports['kv-events'],
          Number(kv.slice('tcp://*:'.length)),
          'a bound KV-event port is exposed',
        );
        assert.ok(svc.spec.ports.some((p: K8sObject) => p.name === 'kv-events'));
      } else assert.equal(ports['kv-events'], undefined);
      assert.equal(Number(args.threads) > 0, true);
    });
  }

  test('all features: GPU request, InferencePool on the serving port, adapters, model volume', () => {
    const docs = report.rendered['all-features.yaml'];
    const pod = one(docs, 'Deployment').spec.template;
    const [container] = pod.spec.containers;
    assert.equal(container.resources.limits['nvidia.com/gpu'], 1);
    const pool = one(docs, 'InferencePool');
    assert.deepEqual(pool.spec.targetPorts, [{ number: 8000 }]);
    for (const [k, v] of Object.entries(pool.spec.selector.matchLabels))
      assert.equal(pod.metadata.labels[k], v);
    assert.deepEqual(pool.spec.endpointPickerRef, {
      name: 'llm-d-epp',
      port: { number: 9002 },
      failureMode: 'FailOpen',
    });
    const config = JSON.parse(one(docs, 'ConfigMap').data['config.json']);
    assert.deepEqual(
      [config.BackendConfig.ModelDeployConfig.maxLoras, config.BackendConfig.ModelDeployConfig.maxLoraRank],
      [4, 64],
    );
    const modelPath = config.BackendConfig.ModelDeployConfig.ModelConfig[0].modelWeightPath as string;
    const modelMount = container.volumeMounts.find((m: K8sObject) => m.name === 'model');
    assert.ok(modelPath.startsWith(modelMount.mountPath + '/'), 'the model file is on the mounted volume');
    assert.equal(byKind(report.rendered.default, 'InferencePool').length, 0, 'no pool unless asked');
  });
});

test('KServe manifests: prism serve flags, health probes, the Secret they mount', () => {
  const runtime = one(report.kserve['servingruntime.yaml'], 'ServingRuntime');
  assert.deepEqual(runtime.spec.protocolVersions, ['v2']);
  const [rc] = runtime.spec.containers;
  const rArgs = serveArgs(rc.args);
  assert.equal(rArgs.port, String(rc.ports[0].containerPort));
  assert.equal(rArgs.model, '/mnt/models');
  assertProbes(rc, rc.ports[0].containerPort);
  const isvc = one(report.kserve['inferenceservice.yaml'], 'InferenceService');
  assert.equal(isvc.spec.predictor.model.runtime, runtime.metadata.name);
  assert.ok(
    runtime.spec.supportedModelFormats.some(
      (f: K8sObject) => f.name === isvc.spec.predictor.model.modelFormat.name,
    ),
  );
  const llm = one(report.kserve['llminferenceservice.yaml'], 'LLMInferenceService');
  const [main] = llm.spec.template.containers;
  assert.deepEqual(main.command, ['prism']);
  const lArgs = serveArgs(main.args);
  assert.equal(lArgs['model-name'], llm.spec.model.name);
  assert.equal(lArgs['kv-events-endpoint'], 'tcp://*:5556');
  assertProbes(main, Number(lArgs.port));
  for (const [spec, c, a] of [
    [runtime.spec, rc, rArgs],
    [llm.spec.template, main, lArgs],
  ] as const) {
    const mount = c.volumeMounts.find((m: K8sObject) =>
      (a['management-api-key-file'] as string).startsWith(m.mountPath),
    );
    assert.equal(
      spec.volumes.find((v: K8sObject) => v.name === mount.name).secret.secretName,
      'prism-management',
    );
  }
});

test('the validator rejects what the API server would reject', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prism-deploy-'));
  const bad = join(dir, 'bad.yaml');
  writeFileSync(
    bad,
    [
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: "two"\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}',
      'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, targetPrt: 8000}]}',
      'apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: p}\nspec:\n  selector: {matchLabels: {a: b}}\n  targetPorts: [{number: 8000}]\n  endpointPickerRef: {name: epp, port: {number: 9002}, failureMode: Maybe}',
      'apiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\nmetadata: {name: r}\nspec:\n  supportedModelFormats: [{name: gguf}]\n  containers: [{name: k, image: i, portz: []}]',
      'apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: l}\nspec: {model: {name: m}}',
      'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}',
    ].join('\n---\n'),
  );
  const r = validatePy(['--check', bad]);
  assert.equal(r.status, 1, r.stderr);
  const { errors } = JSON.parse(r.stdout) as { errors: string[] };
  const expect = [
    /Deployment x: spec\.replicas: 'two' is not of type 'integer'/,
    /Service s: spec\.ports\.0: .*'targetPrt' was unexpected/,
    /InferencePool p: spec\.endpointPickerRef\.failureMode: 'Maybe' is not one of/,
    /ServingRuntime r: spec\.containers\.0: .*'portz' was unexpected/,
    /LLMInferenceService l: spec\.model: 'uri' is a required property/,
    /Widget w: no schema for example\.com\/v1 Widget/,
  ];
  assert.equal(errors.length, expect.length, errors.join('\n'));
  expect.forEach((re, i) => assert.match(errors[i], re));
});
