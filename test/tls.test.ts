/**
 * HTTPS and mutual TLS from a MindIE-style ServerConfig. The test makes its own CAs and
 * certificates with `openssl`: a client certificate from the configured CA is served; no
 * certificate, one from another CA, or a revoked one (CRL) is refused in the handshake.
 * The server key is passphrase-protected (tlsPkPwd names the passphrase file).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gatewayConfigFromMindie, type GatewayConfig } from '../gateways/config.js';
import { startGateway } from '../gateways/server.js';
import { makeCa, makeCert, openssl } from './certs.js';
import { startHarness, type Harness } from './gateways-harness.js';

let dir: string;
let h: Harness;

const ssl = (...args: string[]): void => openssl(dir, ...args);

function tlsConfigFile(): object {
  return {
    ServerConfig: {
      httpsEnabled: true,
      ipAddress: '127.0.0.1',
      managementIpAddress: '127.0.0.1',
      port: 0,
      managementPort: 0,
      metricsPort: 0,
      tlsCaPath: '.',
      tlsCaFile: ['ca1.pem'],
      tlsCert: 'server.pem',
      tlsPk: 'server.key',
      tlsPkPwd: 'key_pwd.txt',
      tlsCrlPath: '.',
      tlsCrlFiles: ['ca1.crl'],
      managementTlsCaFile: ['ca1.pem'],
      managementTlsCert: 'server.pem',
      managementTlsPk: 'server.key',
      managementTlsPkPwd: 'key_pwd.txt',
      managementTlsCrlFiles: ['ca1.crl'],
      metricsTlsCaFile: ['ca1.pem'],
      metricsTlsCert: 'server.pem',
      metricsTlsPk: 'server.key',
      metricsTlsPkPwd: 'key_pwd.txt',
      metricsTlsCrlFiles: ['ca1.crl'],
    },
  };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-tls-'));
  makeCa(dir, 'ca1');
  makeCa(dir, 'ca2');
  writeFileSync(join(dir, 'key_pwd.txt'), 'correct horse battery\n');
  makeCert(dir, 'server', 'ca1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n', [
    '-passout',
    'pass:correct horse battery',
  ]);
  const clientExt = 'extendedKeyUsage=clientAuth\n';
  makeCert(dir, 'client', 'ca1', clientExt);
  makeCert(dir, 'revoked', 'ca1', clientExt);
  makeCert(dir, 'stranger', 'ca2', clientExt);
  // A CRL of ca1 that revokes `revoked` (openssl ca needs its small database).
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'crlnumber'), '01\n');
  writeFileSync(
    join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ncrlnumber=crlnumber\ndefault_md=sha256\ndefault_crl_days=2\ncertificate=ca1.pem\nprivate_key=ca1.key\n`,
  );
  ssl('ca', '-config', 'ca.cnf', '-revoke', 'revoked.pem');
  ssl('ca', '-config', 'ca.cnf', '-gencrl', '-out', 'ca1.crl');
  h = await startHarness(gatewayConfigFromMindie(tlsConfigFile(), dir));
});

after(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function get(url: string, client?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/health`,
      {
        ca: readFileSync(join(dir, 'ca1.pem')),
        ...(client
          ? { cert: readFileSync(join(dir, `${client}.pem`)), key: readFileSync(join(dir, `${client}.key`)) }
          : {}),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('every listener is HTTPS and serves a client certificate from the configured CA', async () => {
  for (const url of [h.url, h.managementUrl]) {
    assert.match(url, /^https:/);
    assert.equal(await get(url, 'client'), 200);
  }
  assert.match(h.metricsUrl, /^https:/);
});

test('no client certificate, another CA, or a revoked certificate is refused', async () => {
  await assert.rejects(get(h.url));
  await assert.rejects(get(h.url, 'stranger'));
  await assert.rejects(get(h.url, 'revoked'));
  // The same certificate is served when no CRL is configured: the CRL is what refused it.
  const file = tlsConfigFile() as { ServerConfig: Record<string, unknown> };
  file.ServerConfig.tlsCrlFiles = [];
  const noCrl = await startGateway({ engine: h.client, config: gatewayConfigFromMindie(file, dir) });
  try {
    assert.equal(await get(noCrl.url('service'), 'revoked'), 200);
  } finally {
    await noCrl.close();
  }
});

test('plain HTTP to the HTTPS port gets no HTTP answer', async () => {
  const port = new URL(h.url).port;
  await assert.rejects(fetch(`http://127.0.0.1:${port}/health`));
});

test('a wrong key passphrase stops the gateway from starting, naming the listener', async () => {
  writeFileSync(join(dir, 'wrong_pwd.txt'), 'nope\n');
  const file = tlsConfigFile() as { ServerConfig: Record<string, unknown> };
  file.ServerConfig.tlsPkPwd = 'wrong_pwd.txt';
  const config: GatewayConfig = gatewayConfigFromMindie(file, dir);
  await assert.rejects(startGateway({ engine: h.client, config }), /service.*TLS setup failed|TLS/);
  file.ServerConfig.tlsCert = 'missing.pem';
  file.ServerConfig.tlsPkPwd = 'key_pwd.txt';
  await assert.rejects(
    startGateway({ engine: h.client, config: gatewayConfigFromMindie(file, dir) }),
    /TLS certificate: cannot read .*missing\.pem/,
  );
});
