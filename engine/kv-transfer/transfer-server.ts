/**
 * The holder's side of TransferKv: checks the puller's cache against this engine's (model
 * fingerprint, block size, KV dtype, layer count and head shape) before anything moves, takes
 * the lease, sends the header, then every block from `first_block` on, all layers, in block
 * order, a few whole layers per chunk. The chunks are read from the cache only as the caller
 * asks for the next one, so a slow puller holds the server back (the gRPC handler waits for
 * the transport to drain) instead of making it buffer the sequence. The lease is used up when
 * the stream ends, whether it ran to the end, failed or was cancelled.
 */
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError, invalidArgument } from '../errors.js';
import type { LeaseTable } from './lease-table.js';
import type { KvStore } from '../runner.js';
import { compatMismatch, type KvCompat } from './types.js';

/** Default chunk payload: whole layers of one block up to this many bytes (at least one layer). */
const DEFAULT_CHUNK_BYTES = 1 << 20;

export interface TransferSource {
  readonly compat: KvCompat;
  readonly leases: LeaseTable;
  readonly kv: KvStore;
  /** Told the bytes of each chunk sent, and when a transfer ended (ok or not). */
  readonly served?: (bytes: number) => void;
  readonly ended?: (ok: boolean) => void;
}

function compatFromProto(c: pb.KvCompat | undefined): KvCompat {
  if (!c) throw invalidArgument('compat', 'is required');
  return {
    modelFingerprint: c.modelFingerprint,
    blockSize: c.blockSize,
    kvDtype: c.kvDtype,
    layers: c.layers,
    kvHeads: c.kvHeads,
    headDim: c.headDim,
  };
}

export function compatToProto(c: KvCompat): pb.KvCompat {
  return { ...c };
}

export async function* serveTransfer(
  req: pb.TransferKvRequest,
  src: TransferSource,
): AsyncGenerator<pb.TransferKvChunk> {
  if (req.leaseId === '') throw invalidArgument('lease_id', 'is required');
  const mismatch = compatMismatch(src.compat, compatFromProto(req.compat));
  // Refused before the lease is touched: it stays for a puller that matches (or expires).
  if (mismatch !== null)
    throw new EngineError('INVALID_ARGUMENT', `compat: the engines cannot share KV (${mismatch})`, 'compat');
  const lease = src.leases.begin(req.leaseId);
  if (!lease)
    throw new EngineError(
      'NOT_FOUND',
      `lease '${req.leaseId}' is not held here (never made, already pulled, cancelled or expired)`,
      'lease_id',
    );
  let ok = false;
  try {
    if (req.firstBlock > lease.blocks.length)
      throw invalidArgument('first_block', `must be at most ${lease.blocks.length}, got ${req.firstBlock}`);
    const { layers, blockLayerBytes } = src.kv.layout;
    const cap = req.maxChunkBytes > 0 ? req.maxChunkBytes : DEFAULT_CHUNK_BYTES;
    const perChunk = Math.max(1, Math.min(layers, Math.floor(cap / blockLayerBytes)));
    yield {
      part: {
        $case: 'header',
        header: {
          compat: compatToProto(src.compat),
          tokenIds: [...lease.tokens],
          numBlocks: lease.blocks.length - req.firstBlock,
          firstToken: lease.firstToken,
          firstLogprob: lease.firstLogprob,
          seed: lease.seed,
        },
      },
    };
    for (let i = req.firstBlock; i < lease.blocks.length; i++) {
      for (let l = 0; l < layers; l += perChunk) {
        const count = Math.min(perChunk, layers - l);
        const bytes = src.kv.read(lease.blocks[i], l, count);
        src.served?.(bytes.byteLength);
        const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        yield { part: { $case: 'block', block: { blockIndex: i, layerStart: l, layerCount: count, data } } };
      }
    }
    ok = true;
  } finally {
    src.leases.end(lease);
    src.ended?.(ok);
  }
}
