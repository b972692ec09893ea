/**
 * Exposure rules of shared/listener.ts: keyless listeners off the loopback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkExposure, isLoopbackHost, startListener } from './listener.js';

test('loopback addresses: 127.0.0.0/8, ::1, localhost and their mapped forms', () => {
  for (const h of ['127.0.0.1', '127.0.0.2', '127.255.0.9', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])
    assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'fe80::1', '128.0.0.1', 'pod.local'])
    assert.equal(isLoopbackHost(h), false, h);
});

test('a keyless management listener off the loopback is refused unless open on purpose', () => {
  const cfg = { host: '10.0.0.5', port: 1026 };
  assert.throws(
    () => checkExposure('management', cfg),
    /management listener on 10\.0\.0\.5:1026 has no API keys.*--management-api-key-file.*--allow-open-management/,
  );
  assert.throws(
    () => checkExposure('service+management', { host: '0.0.0.0', port: 1025 }),
    /service\+management/,
  );
  assert.match(
    checkExposure('management', { ...cfg, allowOpen: true }) ?? '',
    /management listener on 10\.0\.0\.5:1026 \(not a loopback address\) has no API keys/,
  );
  assert.equal(checkExposure('management', { ...cfg, apiKeys: ['k'] }), undefined);
  assert.equal(checkExposure('management', { host: '127.0.0.2', port: 1026 }), undefined);
});

test('keyless service and metrics listeners off the loopback start with a warning naming them', async () => {
  assert.match(
    checkExposure('service', { host: '0.0.0.0', port: 8000 }) ?? '',
    /^service listener on 0\.0\.0\.0:8000 .*--api-key-file/,
  );
  assert.match(
    checkExposure('metrics', { host: '::', port: 1027 }) ?? '',
    /^metrics listener on :::1027 .*--management-api-key-file/,
  );
  assert.equal(checkExposure('service', { host: '0.0.0.0', port: 8000, apiKeys: ['k'] }), undefined);
  const l = await startListener('service', { host: '127.0.0.1', port: 0 }, (_req, res) => res.end());
  assert.equal(l.warning, undefined);
  await l.close();
  await assert.rejects(
    startListener('management', { host: '0.0.0.0', port: 0 }, (_req, res) => res.end()),
    /has no API keys/,
  );
});
