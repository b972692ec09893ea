/**
 * gRPC channels to the other engines a split request touches (the decode engine a prefill
 * hands off to, the prefill engine a decode pulls from), one per address, made on first use
 * and closed with the engine. They dial with the same credentials and limits as the engine's
 * own clients (engine/service/client.ts), so a transfer runs wherever the engine's other RPCs
 * run: TCP or a unix socket.
 */
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../gen/prism/engine/v1/engine.js';

/** A KV chunk is at most a few MiB; a hand-off carries a whole request. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class Peers {
  private readonly clients = new Map<string, pb.EngineClient>();

  constructor(private readonly credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure()) {}

  get(address: string): pb.EngineClient {
    let c = this.clients.get(address);
    if (!c) {
      c = new pb.EngineClient(address, this.credentials, {
        'grpc.enable_channelz': 0,
        'grpc.enable_retries': 0,
        'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
        'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      });
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

/** A MindIE d-target (`ip;port`, `ip:port`, `[v6]:port` or `unix:PATH`) as a gRPC target. */
export function decodeTargetAddress(target: string): string | null {
  const t = target.trim();
  if (t.startsWith('unix:')) return t.length > 'unix:'.length ? t : null;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^;:[\]\s]+)[;:](\d{1,5})$/.exec(t);
  if (!m || Number(m[2]) > 65535) return null;
  return `${m[1]}:${m[2]}`;
}
