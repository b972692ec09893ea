/**
 * TLS edge cases of a listener (gateways/shared/listener.ts), with certificates made by
 * `openssl` here: an expired (or not yet valid) server certificate stops start-up with a
 * message naming the file and the date; TLS 1.0 and 1.1 clients are refused in the handshake
 * while TLS 1.2 and 1.3 are served; a wrong key passphrase is a clear start-up error.
 * (Client certificates from another CA or revoked by the CRL: test/tls.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect, type SecureVersion } from 'node:tls';
import type { TlsConfig } from '../gateways/config.js';
import { startListener, type RunningListener } from '../gateways/shared/listener.js';
import { makeCa, makeRequest, openssl } from './certs.js';

let dir: string;
const ssl = (...args: string[]): void => openssl(dir, ...args);

/** A server certificate signed by `ca` valid between the two dates (openssl `ca` format). */
function signed(name: string, start: string, end: string): void {
  makeRequest(dir, name);
  ssl(
    'ca',
    '-batch',
    '-config',
    'ca.cnf',
    '-cert',
    'ca.pem',
    '-keyfile',
    'ca.key',
    '-in',
    `${name}.csr`,
    '-out',
    `${name}.pem`,
    '-startdate',
    start,
    '-enddate',
    end,
  );
}

const tlsOf = (name: string, extra: Partial<TlsConfig> = {}): TlsConfig => ({
  certFile: join(dir, `${name}.pem`),
  keyFile: join(dir, `${name}.key`),
  caFiles: [],
  crlFiles: [],
  ...extra,
});

const utc = (d: Date): string => d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
const day = 86400000;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prism-tls-edge-'));
  makeCa(dir, 'ca', 'edge-ca');
  writeFileSync(
    join(dir, 'ca.cnf'),
    '[ca]\ndefault_ca=x\n[x]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n',
  );
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '01\n');
  const now = Date.now();
  signed('expired', '20200101000000Z', '20200201000000Z');
  signed('future', utc(new Date(now + 10 * day)), utc(new Date(now + 20 * day)));
  signed('good', utc(new Date(now - day)), utc(new Date(now + day)));
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-keyout',
    'locked.key',
    '-passout',
    'pass:right-one',
    '-out',
    'locked.csr',
    '-subj',
    '/CN=locked',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    'locked.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'locked.pem',
    '-days',
    '2',
  );
  writeFileSync(join(dir, 'wrong-pass.txt'), 'not-the-one\n');
  writeFileSync(join(dir, 'right-pass.txt'), 'right-one\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

const ok = (_req: unknown, res: { end(s: string): void }): void => res.end('ok');

test('an expired server certificate stops start-up, naming the file and the date', async () => {
  await assert.rejects(
    startListener('service', { host: '127.0.0.1', port: 0, tls: tlsOf('expired') }, ok),
    /service TLS certificate: .*expired\.pem expired on 2020-02-01T00:00:00\.000Z; renew it/,
  );
  await assert.rejects(
    startListener('management', { host: '127.0.0.1', port: 0, tls: tlsOf('future') }, ok),
    /management TLS certificate: .*future\.pem is not valid before/,
  );
});

test('a wrong key passphrase is a clear start-up error; the right one serves', async () => {
  await assert.rejects(
    startListener(
      'service',
      {
        host: '127.0.0.1',
        port: 0,
        tls: tlsOf('locked', { keyPassphraseFile: join(dir, 'wrong-pass.txt') }),
      },
      ok,
    ),
    /service TLS setup failed: .*(bad decrypt|passphrase)/i,
  );
  const l = await startListener(
    'service',
    { host: '127.0.0.1', port: 0, tls: tlsOf('locked', { keyPassphraseFile: join(dir, 'right-pass.txt') }) },
    ok,
  );
  await l.close();
});

function handshake(port: number, version: SecureVersion): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      minVersion: version,
      maxVersion: version,
      // Let this client offer the old protocols at all (OpenSSL's default level forbids them),
      // so a refusal comes from the server (its protocol_version alert).
      ciphers: 'DEFAULT@SECLEVEL=0',
    });
    socket.once('secureConnect', () => {
      const v = socket.getProtocol() ?? '?';
      socket.destroy();
      resolve(`connected ${v}`);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(`refused ${e.code ?? e.message}`));
  });
}

test('TLS 1.0 and 1.1 are refused in the handshake; 1.2 and 1.3 are served', async () => {
  let l: RunningListener | undefined;
  try {
    l = await startListener('service', { host: '127.0.0.1', port: 0, tls: tlsOf('good') }, ok);
    const port = Number(new URL(l.url).port);
    assert.equal(await handshake(port, 'TLSv1.3'), 'connected TLSv1.3');
    assert.equal(await handshake(port, 'TLSv1.2'), 'connected TLSv1.2');
    for (const v of ['TLSv1', 'TLSv1.1'] as const) {
      const r = await handshake(port, v);
      assert.match(r, /^refused ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION$/, `${v}: ${r}`);
    }
  } finally {
    await l?.close();
  }
});
