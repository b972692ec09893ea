/**
 * Split prefill/decode inside the engine: what two engines must share for KV to move, the
 * counters of what moved, and the address helpers of a pull. The records the engine's API
 * carries (roles, a request's spec, a finish's params) are on the ground floor,
 * engine/pd-types.ts; the KV store a runner offers is the runner's (engine/runner.ts).
 */
/** What two engines must share for KV to move between them (checked before any block moves). */
export interface KvCompat {
  readonly modelFingerprint: string;
  readonly blockSize: number;
  readonly kvDtype: string;
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/** Counters of the KV moved, for the status RPC and the benchmark. */
export interface KvTransferCounters {
  readonly leasedBlocks: number;
  readonly transfersIn: number;
  readonly bytesIn: number;
  readonly transferMsIn: number;
  readonly tokensIn: number;
  readonly transfersOut: number;
  readonly bytesOut: number;
  readonly failures: number;
}

/** The first differing field of two compat records, or null when they agree. */
export function compatMismatch(mine: KvCompat, theirs: KvCompat): string | null {
  const fields: (keyof KvCompat)[] = [
    'modelFingerprint',
    'blockSize',
    'kvDtype',
    'layers',
    'kvHeads',
    'headDim',
  ];
  for (const f of fields) {
    if (mine[f] !== theirs[f])
      return `${f}: this engine has ${String(mine[f])}, the other ${String(theirs[f])}`;
  }
  return null;
}

/** The gRPC target of a prefill engine named by host and port (`unix:PATH` carries port 0). */
export function remoteTarget(host: string, port: number): string {
  if (host.startsWith('unix:')) return host;
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Host and port of a listen address as kv_transfer_params carry them. */
export function hostPort(address: string): { host: string; port: number } {
  if (address.startsWith('unix:')) return { host: address, port: 0 };
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(i + 1)) };
}
