/**
 * What the gateways need from config.json's ServerConfig (and a few ModelDeployConfig /
 * ScheduleConfig facts they report), as one resolved record. `gatewayConfigFromMindie` maps a
 * parsed MindIE-style config.json onto it; `defaultGatewayConfig` is what `prism serve` uses
 * without a config file (plain HTTP on 127.0.0.1).
 */
import { isAbsolute, resolve } from 'node:path';
import type { ServerLimits } from '../config/types.js';
import { checkKeyShape, readApiKeyFile } from './shared/auth.js';
import { DEFAULT_REQUEST_LOG, type LogLevelName, type RequestLogConfig } from './shared/request-log.js';
import { DEFAULT_MEDIA, type MediaConfig } from './shared/images/media-config.js';

export interface TlsConfig {
  /** PEM server certificate (chain). */
  readonly certFile: string;
  /** PEM private key, possibly encrypted. */
  readonly keyFile: string;
  /** A file holding the key's passphrase (first line), when the key is encrypted. */
  readonly keyPassphraseFile?: string;
  /** CA certificates that client certificates must chain to; non-empty = mutual TLS. */
  readonly caFiles: readonly string[];
  /** Certificate revocation lists checked against client certificates. */
  readonly crlFiles: readonly string[];
}

export interface ListenerConfig {
  readonly host: string;
  readonly port: number;
  /** Absent: plain HTTP. */
  readonly tls?: TlsConfig;
  /** API keys this listener accepts (shared/auth.ts); absent or empty: no authentication. */
  readonly apiKeys?: readonly string[];
  /** Keyless off the loopback on purpose (management: --allow-open-management); shared/listener.ts. */
  readonly allowOpen?: boolean;
}

/**
 * Limits that protect the process from what a client sends (shared/limits.ts); each is named
 * in config/README.md with its default. ServerConfig.limits in config.json.
 */
export interface GatewayLimits extends ServerLimits {
  /** Open connections on the service listener; more are closed at once (3 × maxLinkNum). */
  readonly maxConnections: number;
}

export interface GatewayConfig {
  readonly service: ListenerConfig;
  readonly management: ListenerConfig;
  readonly metrics: ListenerConfig;
  /** Largest accepted request body in bytes (ServerConfig.maxRequestLength, in MB there). */
  readonly maxRequestBytes: number;
  /** Streams carry the whole text so far instead of deltas (ServerConfig.fullTextEnabled; native/KServe streams). */
  readonly fullTextEnabled: boolean;
  /** Health and metrics routes answer without an API key (ServerConfig.openHealthAndMetrics). */
  readonly openHealthAndMetrics: boolean;
  readonly limits: GatewayLimits;
  /** The request log (LogConfig): level, text or JSON, stderr or a rotated file. */
  readonly requestLog: RequestLogConfig;
  /** Upper bound N of `/health/timed-N`, seconds. */
  readonly healthTimedMaxSeconds: number;
  /** Where image parts may come from and how large they may be (command-line flags). */
  readonly media: MediaConfig;
  /** Facts reported by /v2/models/{m}/config and /v2 (from ModelConfig / ScheduleConfig). */
  readonly model: {
    readonly modelInstanceType: string;
    readonly worldSize: number;
    readonly cpuMemSize: number;
    readonly npuMemSize: number;
  };
  readonly schedule: {
    readonly maxIterTimes: number;
    readonly maxPrefillBatchSize: number;
    readonly prefillPolicyType: number;
    readonly decodePolicyType: number;
  };
}

const MB = 1024 * 1024;

/** The defaults of ServerConfig.limits (config/schema.ts carries the same numbers). */
export const DEFAULT_LIMITS: GatewayLimits = {
  maxJsonDepth: 64,
  maxArrayLength: 100_000,
  maxMessages: 4096,
  maxTools: 256,
  maxHeaderBytes: 16 * 1024,
  maxHeaderCount: 100,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 3 * 1000,
};

export function defaultGatewayConfig(host = '127.0.0.1', port = 1025): GatewayConfig {
  return {
    service: { host, port },
    management: { host, port: port + 1 },
    metrics: { host, port: port + 2 },
    maxRequestBytes: 40 * MB,
    fullTextEnabled: false,
    openHealthAndMetrics: true,
    limits: DEFAULT_LIMITS,
    requestLog: DEFAULT_REQUEST_LOG,
    healthTimedMaxSeconds: 600,
    media: DEFAULT_MEDIA,
    model: { modelInstanceType: 'Standard', worldSize: 1, cpuMemSize: 0, npuMemSize: -1 },
    schedule: { maxIterTimes: 512, maxPrefillBatchSize: 0, prefillPolicyType: 0, decodePolicyType: 0 },
  };
}

/** The parts of a MindIE config.json read here (config/ validates the whole file). */
export interface MindieConfigLike {
  readonly ServerConfig?: Record<string, unknown>;
  readonly BackendConfig?: {
    readonly ModelDeployConfig?: { readonly ModelConfig?: readonly Record<string, unknown>[] } & Record<
      string,
      unknown
    >;
    readonly ScheduleConfig?: Record<string, unknown>;
  };
  readonly LogConfig?: Record<string, unknown>;
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}
function str(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v : fallback;
}
function strList(v: unknown, fallback: readonly string[]): readonly string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : fallback;
}

/**
 * TLS files of one listener. MindIE names the fields with a per-listener prefix: `tls…` for the
 * service listener, `managementTls…`, `metricsTls…`; CA path is shared (`tlsCaPath`), as is the
 * CRL path unless the prefixed one is set. Relative paths are resolved against `baseDir`
 * (MindIE resolves them against its install directory; Prism uses the config file's folder).
 */
function tlsOf(
  sc: Record<string, unknown>,
  prefix: 'tls' | 'managementTls' | 'metricsTls',
  baseDir: string,
): TlsConfig {
  const at = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  const defaults = {
    tls: {
      ca: ['ca.pem'],
      cert: 'security/certs/server.pem',
      pk: 'security/keys/server.key.pem',
      crl: ['server_crl.pem'],
    },
    managementTls: {
      ca: ['management_ca.pem'],
      cert: 'security/certs/management/server.pem',
      pk: 'security/keys/management/server.key.pem',
      crl: ['server_crl.pem'],
    },
    metricsTls: {
      ca: ['metrics_ca.pem'],
      cert: 'security/certs/metrics/server.pem',
      pk: 'security/keys/metrics/server.key.pem',
      crl: ['server_crl.pem'],
    },
  }[prefix];
  const caPath = str(sc.tlsCaPath, 'security/ca/');
  const crlPath = str(sc[`${prefix}CrlPath`], str(sc.tlsCrlPath, 'security/certs/'));
  const caKey = prefix === 'tls' ? 'tlsCaFile' : `${prefix}CaFile`;
  const pwd = sc[`${prefix}PkPwd`];
  return {
    certFile: at(str(sc[`${prefix}Cert`], defaults.cert)),
    keyFile: at(str(sc[`${prefix}Pk`], defaults.pk)),
    keyPassphraseFile: typeof pwd === 'string' && pwd !== '' ? at(pwd) : undefined,
    caFiles: strList(sc[caKey], defaults.ca).map((f) => at(resolve(at(caPath), f))),
    crlFiles: strList(sc[`${prefix}CrlFiles`], defaults.crl).map((f) => at(resolve(at(crlPath), f))),
  };
}

/** Keys written in config.json (`<prefix>ApiKeys`) plus those of its key file (`<prefix>ApiKeyFile`). */
function apiKeysOf(sc: Record<string, unknown>, prefix: '' | 'management', baseDir: string): string[] {
  const listField = prefix ? `${prefix}ApiKeys` : 'apiKeys';
  const fileField = prefix ? `${prefix}ApiKeyFile` : 'apiKeyFile';
  const keys = [...strList(sc[listField], [])];
  keys.forEach((k, i) => checkKeyShape(k, `ServerConfig.${listField}[${i}]`));
  const file = sc[fileField];
  if (typeof file === 'string' && file !== '') {
    keys.push(
      ...readApiKeyFile(isAbsolute(file) ? file : resolve(baseDir, file), `ServerConfig.${fileField}`),
    );
  }
  return keys;
}

function limitsOf(sc: Record<string, unknown>): GatewayLimits {
  const l = (sc.limits ?? {}) as Record<string, unknown>;
  const d = DEFAULT_LIMITS;
  return {
    maxJsonDepth: num(l.maxJsonDepth, d.maxJsonDepth),
    maxArrayLength: num(l.maxArrayLength, d.maxArrayLength),
    maxMessages: num(l.maxMessages, d.maxMessages),
    maxTools: num(l.maxTools, d.maxTools),
    maxHeaderBytes: num(l.maxHeaderBytes, d.maxHeaderBytes),
    maxHeaderCount: num(l.maxHeaderCount, d.maxHeaderCount),
    headersTimeoutMs: num(l.headersTimeoutMs, d.headersTimeoutMs),
    requestTimeoutMs: num(l.requestTimeoutMs, d.requestTimeoutMs),
    keepAliveTimeoutMs: num(l.keepAliveTimeoutMs, d.keepAliveTimeoutMs),
    // MindIE: maxLinkNum run, 2 × maxLinkNum wait, the next one is refused.
    maxConnections: 3 * num(sc.maxLinkNum, 1000),
  };
}

/**
 * LogConfig → the request log. MindIE's `logLevel`, and `logPath` / `logFileSize` (MB) /
 * `logFileNum` when Prism's `logToFile` is true (else stderr); Prism's `logFormat` (text or
 * json) and `logPrompts` (write the prompt on each line; off by default).
 */
function requestLogOf(lc: Record<string, unknown>, baseDir: string): RequestLogConfig {
  const path = str(lc.logPath, 'logs/mindie-server.log');
  return {
    level: str(lc.logLevel, DEFAULT_REQUEST_LOG.level) as LogLevelName,
    format: lc.logFormat === 'json' ? 'json' : 'text',
    includePrompt: lc.logPrompts === true,
    ...(lc.logToFile === true
      ? {
          file: {
            path: isAbsolute(path) ? path : resolve(baseDir, path),
            maxBytes: num(lc.logFileSize, 20) * MB,
            maxFiles: num(lc.logFileNum, 20),
          },
        }
      : {}),
  };
}

/**
 * Maps a (validated) MindIE config.json onto the gateway record. `httpsEnabled` defaults to
 * true as in MindIE: a config file that does not turn it off must provide the certificates.
 */
export function gatewayConfigFromMindie(cfg: MindieConfigLike, baseDir: string): GatewayConfig {
  const sc = cfg.ServerConfig ?? {};
  const d = defaultGatewayConfig();
  const https = sc.httpsEnabled !== false;
  const mc = cfg.BackendConfig?.ModelDeployConfig?.ModelConfig?.[0] ?? {};
  const sch = cfg.BackendConfig?.ScheduleConfig ?? {};
  const host = process.env.MIES_CONTAINER_IP || str(sc.ipAddress, '127.0.0.1');
  const mgmtHost = process.env.MIES_CONTAINER_MANAGEMENT_IP || str(sc.managementIpAddress, '127.0.0.2');
  const serviceKeys = apiKeysOf(sc, '', baseDir);
  // The metrics listener is an operator's listener: it takes the management keys.
  const managementKeys = apiKeysOf(sc, 'management', baseDir);
  return {
    service: {
      host,
      port: num(sc.port, 1025),
      tls: https ? tlsOf(sc, 'tls', baseDir) : undefined,
      apiKeys: serviceKeys,
    },
    management: {
      host: mgmtHost,
      port: num(sc.managementPort, 1026),
      tls: https ? tlsOf(sc, 'managementTls', baseDir) : undefined,
      apiKeys: managementKeys,
    },
    // MindIE serves metrics on the management address.
    metrics: {
      host: mgmtHost,
      port: num(sc.metricsPort, 1027),
      tls: https ? tlsOf(sc, 'metricsTls', baseDir) : undefined,
      apiKeys: managementKeys,
    },
    maxRequestBytes: num(sc.maxRequestLength, 40) * MB,
    fullTextEnabled: sc.fullTextEnabled === true,
    openHealthAndMetrics: sc.openHealthAndMetrics !== false,
    limits: limitsOf(sc),
    requestLog: requestLogOf(cfg.LogConfig ?? {}, baseDir),
    healthTimedMaxSeconds: d.healthTimedMaxSeconds,
    media: d.media,
    model: {
      modelInstanceType: str(mc.modelInstanceType, 'Standard'),
      worldSize: num(mc.worldSize, 1),
      cpuMemSize: num(mc.cpuMemSize, 0),
      npuMemSize: num(mc.npuMemSize, -1),
    },
    schedule: {
      maxIterTimes: num(sch.maxIterTimes, 512),
      maxPrefillBatchSize: num(sch.maxPrefillBatchSize, 0),
      prefillPolicyType: num(sch.prefillPolicyType, 0),
      decodePolicyType: num(sch.decodePolicyType, 0),
    },
  };
}

/** Command-line overrides of the listener addresses. */
export interface ListenerOverrides {
  readonly host?: string;
  readonly port?: number;
  readonly managementPort?: number;
  readonly metricsPort?: number;
  /** `--api-key` / `--api-key-file` keys: replace the config file's service keys when given. */
  readonly apiKeys?: readonly string[];
  /** `--management-api-key(-file)`: replace the management (and metrics) keys when given. */
  readonly managementApiKeys?: readonly string[];
  /** `--allow-open-management`: a keyless management listener off the loopback on purpose. */
  readonly allowOpenManagement?: boolean;
  /** `--allow-all-zero-ip-listening`: ServerConfig.allowAllZeroIpListening from the command line. */
  readonly allowAllZeroIpListening?: boolean;
}

/**
 * The gateway record for a run: from the config file when there is one (`source` set), else
 * plain HTTP with management and metrics next to the service port on the same host. Flags win.
 * Binding 0.0.0.0 needs ServerConfig.allowAllZeroIpListening, as in MindIE.
 */
export function resolveGatewayConfig(
  file: MindieConfigLike,
  source: string | undefined,
  flags: ListenerOverrides,
): GatewayConfig {
  const fromFile = gatewayConfigFromMindie(file, source ? resolve(source, '..') : process.cwd());
  let cfg: GatewayConfig = fromFile;
  if (source === undefined) {
    const host = flags.host ?? '127.0.0.1';
    const port = flags.port ?? fromFile.service.port;
    cfg = {
      ...fromFile,
      service: { host, port, apiKeys: fromFile.service.apiKeys },
      management: { host, port: flags.managementPort ?? port + 1, apiKeys: fromFile.management.apiKeys },
      metrics: { host, port: flags.metricsPort ?? port + 2, apiKeys: fromFile.metrics.apiKeys },
    };
  } else {
    cfg = {
      ...fromFile,
      service: {
        ...fromFile.service,
        ...(flags.host ? { host: flags.host } : {}),
        ...(flags.port !== undefined ? { port: flags.port } : {}),
      },
      management: {
        ...fromFile.management,
        ...(flags.managementPort !== undefined ? { port: flags.managementPort } : {}),
      },
      metrics: {
        ...fromFile.metrics,
        ...(flags.metricsPort !== undefined ? { port: flags.metricsPort } : {}),
      },
    };
  }
  if (flags.apiKeys !== undefined) cfg = { ...cfg, service: { ...cfg.service, apiKeys: flags.apiKeys } };
  if (flags.managementApiKeys !== undefined) {
    cfg = {
      ...cfg,
      management: { ...cfg.management, apiKeys: flags.managementApiKeys },
      metrics: { ...cfg.metrics, apiKeys: flags.managementApiKeys },
    };
  }
  if (flags.allowOpenManagement === true || file.ServerConfig?.allowOpenManagement === true) {
    cfg = { ...cfg, management: { ...cfg.management, allowOpen: true } };
  }
  const allowZero =
    flags.allowAllZeroIpListening === true || file.ServerConfig?.allowAllZeroIpListening === true;
  for (const [name, l] of [
    ['service', cfg.service],
    ['management', cfg.management],
    ['metrics', cfg.metrics],
  ] as const) {
    if ((l.host === '0.0.0.0' || l.host === '::') && !allowZero) {
      throw new Error(
        `${name} listener: binding ${l.host} needs ServerConfig.allowAllZeroIpListening = true (or --allow-all-zero-ip-listening)`,
      );
    }
  }
  return cfg;
}
