/**
 * The engine's listen address: `HOST:PORT` (IPv6 as `[::1]:PORT`; port 0 = any free port)
 * or `unix:PATH`. Parsed once, with an error that names the rule, before gRPC sees it.
 */
import { existsSync, lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';

export type ListenAddress =
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  | { readonly kind: 'unix'; readonly path: string };

export function parseListenAddress(text: string, field = '--listen'): ListenAddress {
  if (text.startsWith('unix:')) {
    // grpc-js reads `unix:PATH` (relative or absolute) and `unix:///abs/path`.
    const path = text.startsWith('unix://') ? text.slice('unix://'.length) : text.slice('unix:'.length);
    if (path === '') throw new Error(`${field}: unix socket path is empty (expected unix:PATH)`);
    return { kind: 'unix', path };
  }
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(text);
  if (!m) throw new Error(`${field}: must be HOST:PORT, [IPv6]:PORT or unix:PATH, got '${text}'`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`${field}: port must be in [0, 65535], got ${port}`);
  return { kind: 'tcp', host: m[1], port };
}

/** The gRPC target string for an address (with the real port once bound). */
export function grpcTarget(address: ListenAddress, boundPort?: number): string {
  return address.kind === 'unix' ? `unix:${address.path}` : `${address.host}:${boundPort ?? address.port}`;
}

/**
 * A socket file left by an engine that died is removed so the new one can bind; a socket
 * that still answers belongs to a live process and is left alone (binding then fails clearly).
 */
export async function removeStaleSocket(path: string): Promise<void> {
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) throw new Error(`unix socket path ${path} exists and is not a socket`);
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (alive) throw new Error(`unix socket ${path} is in use by another process`);
  unlinkSync(path);
}
