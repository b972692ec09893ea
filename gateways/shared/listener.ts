/**
 * One HTTP or HTTPS listener per ServerConfig address. HTTPS with CA files configured is
 * mutual TLS: the client must present a certificate chaining to one of those CAs (and not on
 * a configured CRL), otherwise the TLS handshake is refused before any HTTP is read.
 *
 * Exposure (checkExposure): a listener without API keys is open to whoever reaches its
 * address, which is safe only on the loopback default. On any other address (a pod's, or
 * 0.0.0.0) a keyless management listener is refused — it loads adapters and stops the
 * service — unless the operator says it is open on purpose (ListenerConfig.allowOpen:
 * `--allow-open-management`, ServerConfig.allowOpenManagement); a keyless service or metrics
 * listener starts with a warning naming it (behind a cluster's gateway it is the usual setup).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import { DEFAULT_LIMITS, type GatewayLimits, type ListenerConfig, type TlsConfig } from '../config.js';
import { closeIdleWithoutReset } from './idle-close.js';
import { applyConnectionLimits, serverLimitOptions } from './limits.js';

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(
      `${what}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

/**
 * A server certificate outside its validity period would make every client fail its handshake
 * with an obscure error: refuse to start instead, saying which file and which date.
 */
function checkCertificateDates(pem: Buffer, file: string, listenerName: string, now = new Date()): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (err) {
    throw new Error(
      `${listenerName} TLS certificate: ${file} is not a PEM certificate (${(err as Error).message})`,
    );
  }
  if (new Date(cert.validTo) < now) {
    throw new Error(
      `${listenerName} TLS certificate: ${file} expired on ${new Date(cert.validTo).toISOString()}; renew it`,
    );
  }
  if (new Date(cert.validFrom) > now) {
    throw new Error(
      `${listenerName} TLS certificate: ${file} is not valid before ${new Date(cert.validFrom).toISOString()}`,
    );
  }
}

/** Builds Node TLS server options from the configured files; every failure names the file. */
function tlsServerOptions(tls: TlsConfig, listenerName: string): Record<string, unknown> {
  const passphrase = tls.keyPassphraseFile
    ? readFile(tls.keyPassphraseFile, `${listenerName} TLS key passphrase`)
        .toString('utf-8')
        .split(/\r?\n/)[0]
    : undefined;
  const mutual = tls.caFiles.length > 0;
  const cert = readFile(tls.certFile, `${listenerName} TLS certificate`);
  checkCertificateDates(cert, tls.certFile, listenerName);
  return {
    cert,
    key: readFile(tls.keyFile, `${listenerName} TLS private key`),
    passphrase,
    ca: mutual ? tls.caFiles.map((f) => readFile(f, `${listenerName} TLS CA`)) : undefined,
    crl:
      tls.crlFiles.length > 0 ? tls.crlFiles.map((f) => readFile(f, `${listenerName} TLS CRL`)) : undefined,
    requestCert: mutual,
    rejectUnauthorized: mutual,
    // TLS 1.0 and 1.1 are refused in the handshake (protocol_version alert).
    minVersion: 'TLSv1.2',
  };
}

/** Addresses only this machine reaches: 127.0.0.0/8, ::1 (and their mapped and named forms). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * Refuses a keyless management listener off the loopback (unless allowed), else returns the
 * warning a keyless listener off the loopback gets (undefined: nothing to say). `name` is the
 * listener group's name (`service+management` when they share an address).
 */
export function checkExposure(name: string, cfg: ListenerConfig): string | undefined {
  if (isLoopbackHost(cfg.host) || (cfg.apiKeys?.length ?? 0) > 0) return undefined;
  const where = `${cfg.host}:${cfg.port}`;
  if (name.split('+').includes('management') && !cfg.allowOpen) {
    throw new Error(
      `${name} listener on ${where} has no API keys, and anyone who reaches it can load adapters and ` +
        `stop the service: set --management-api-key-file (ServerConfig.managementApiKeyFile), bind it ` +
        `to a loopback address, or pass --allow-open-management (ServerConfig.allowOpenManagement) to ` +
        `run it open on purpose`,
    );
  }
  return (
    `${name} listener on ${where} (not a loopback address) has no API keys: anyone who reaches it ` +
    `can use it (set --${name.startsWith('service') ? '' : 'management-'}api-key-file if that is not intended)`
  );
}

export interface RunningListener {
  readonly name: string;
  /** Said once at start (a keyless listener off the loopback). */
  readonly warning?: string;
  readonly server: Server;
  /** `http://host:port` or `https://host:port`, with the bound port. */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts a listener; resolves once bound. Port 0 picks a free port (tests). */
export async function startListener(
  name: string,
  cfg: ListenerConfig,
  handler: RequestListener,
  limits: GatewayLimits = DEFAULT_LIMITS,
  capConnections = false,
): Promise<RunningListener> {
  const warning = checkExposure(name, cfg);
  let server: Server;
  const limitOptions = serverLimitOptions(limits);
  if (cfg.tls) {
    const options = { ...tlsServerOptions(cfg.tls, name), ...limitOptions };
    try {
      server = createHttpsServer(options, handler) as unknown as Server;
    } catch (err) {
      // e.g. a wrong passphrase or a key that does not match the certificate.
      throw new Error(`${name} TLS setup failed: ${(err as Error).message}`);
    }
  } else {
    server = createHttpServer(limitOptions, handler);
  }
  applyConnectionLimits(server, limits, capConnections);
  closeIdleWithoutReset(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new Error(`${name} listener: cannot listen on ${cfg.host}:${cfg.port}: ${err.message}`)),
    );
    server.listen(cfg.port, cfg.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host;
  return {
    name,
    ...(warning ? { warning } : {}),
    server,
    url: `${cfg.tls ? 'https' : 'http'}://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
