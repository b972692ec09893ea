/**
 * Certificates for the TLS tests, made with `openssl` in a folder of the test's own: a
 * self-signed CA, a key with its signing request, and a certificate signed by a CA with the
 * given extensions (every certificate valid for 2 days).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** `<name>.key` and the self-signed `<name>.pem`. */
export function makeCa(dir: string, name: string, commonName = name): void {
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${commonName}`,
  );
}

/** `<name>.key` and the signing request `<name>.csr` for CN=name (`keyArgs`: e.g. a passphrase). */
export function makeRequest(dir: string, name: string, keyArgs: readonly string[] = ['-nodes']): void {
  openssl(
    dir,
    'req',
    '-newkey',
    'rsa:2048',
    ...keyArgs,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  );
}

/** `<name>.key` and `<name>.pem` signed by the CA `<ca>.pem` with the extensions `ext`. */
export function makeCert(
  dir: string,
  name: string,
  ca: string,
  ext: string,
  keyArgs?: readonly string[],
): void {
  makeRequest(dir, name, keyArgs);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
}
