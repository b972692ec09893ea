/**
 * The puller's side of TransferKv: one call to the engine holding the lease, with a deadline,
 * cancelled with the request that waits for it. The header is checked against this engine's
 * cache (the holder checks too, before sending it); then each chunk is checked — a block of
 * the lease that was asked for, whole layers inside the model, the exact byte count, nothing
 * written twice — and written straight into the blocks `place` gave for it. The transfer
 * succeeds only when every layer of every block arrived.
 */
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError } from '../errors.js';
import { fromGrpcError } from '../grpc-status.js';
import { compatToProto } from './transfer-server.js';
import type { KvStore } from '../runner.js';
import { compatMismatch, type KvCompat } from './types.js';

export interface PullRequest {
  readonly leaseId: string;
  /** Lease blocks before this index are not sent (this engine holds them already). */
  readonly firstBlock: number;
  readonly maxChunkBytes?: number;
}

export interface PulledHeader {
  readonly tokenIds: readonly number[];
  readonly numBlocks: number;
  readonly firstToken: number;
  readonly firstLogprob: number;
  readonly seed: number;
}

export interface PullResult {
  readonly header: PulledHeader;
  readonly bytes: number;
  readonly ms: number;
}

/**
 * `place(header)` returns this engine's block for each block that follows (lease index
 * firstBlock + i → blocks[i]); it may throw (no room: the pull is abandoned).
 */
export async function pullKv(
  client: pb.EngineClient,
  request: PullRequest,
  mine: { readonly compat: KvCompat; readonly kv: KvStore },
  place: (header: PulledHeader) => readonly number[],
  options: { readonly deadlineMs: number; readonly signal?: AbortSignal; readonly source: string },
): Promise<PullResult> {
  const started = performance.now();
  const fail = (why: string): EngineError =>
    new EngineError('GENERATION_FAILED', `KV transfer from ${options.source} failed: ${why}`);
  if (options.signal?.aborted) throw new EngineError('CANCELLED', 'the request was cancelled');
  const call = client.transferKv(
    {
      leaseId: request.leaseId,
      compat: compatToProto(mine.compat),
      firstBlock: request.firstBlock,
      maxChunkBytes: request.maxChunkBytes ?? 0,
    },
    new grpc.Metadata(),
    { deadline: Date.now() + options.deadlineMs },
  );
  const onAbort = (): void => call.cancel();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const { layers, blockLayerBytes } = mine.kv.layout;
  let header: PulledHeader | undefined;
  let blocks: readonly number[] = [];
  let written: Uint8Array = new Uint8Array(0); // one flag per (block, layer)
  let bytes = 0;
  try {
    for await (const chunk of call as AsyncIterable<pb.TransferKvChunk>) {
      const part = chunk.part;
      if (!part) throw fail('an empty chunk');
      if (part.$case === 'header') {
        if (header) throw fail('a second header');
        const h = part.header;
        const mismatch = compatMismatch(mine.compat, {
          modelFingerprint: h.compat?.modelFingerprint ?? '',
          blockSize: h.compat?.blockSize ?? 0,
          kvDtype: h.compat?.kvDtype ?? '',
          layers: h.compat?.layers ?? 0,
          kvHeads: h.compat?.kvHeads ?? 0,
          headDim: h.compat?.headDim ?? 0,
        });
        if (mismatch !== null) throw fail(`the engines cannot share KV (${mismatch})`);
        header = {
          tokenIds: h.tokenIds,
          numBlocks: h.numBlocks,
          firstToken: h.firstToken,
          firstLogprob: h.firstLogprob,
          seed: h.seed,
        };
        const needed = Math.ceil(h.tokenIds.length / mine.compat.blockSize) - request.firstBlock;
        if (h.numBlocks !== needed)
          throw fail(
            `the header announces ${h.numBlocks} blocks for ${h.tokenIds.length} tokens, expected ${needed}`,
          );
        blocks = place(header);
        if (blocks.length !== h.numBlocks) throw fail('no place for the blocks');
        written = new Uint8Array(h.numBlocks * layers);
        continue;
      }
      if (!header) throw fail('a block before the header');
      const b = part.block;
      const i = b.blockIndex - request.firstBlock;
      if (!Number.isInteger(i) || i < 0 || i >= blocks.length)
        throw fail(`block index ${b.blockIndex} is outside the blocks asked for`);
      if (b.layerCount < 1 || b.layerStart + b.layerCount > layers)
        throw fail(`layers ${b.layerStart}+${b.layerCount} are outside the model's ${layers}`);
      if (b.data.byteLength !== b.layerCount * blockLayerBytes)
        throw fail(
          `block ${b.blockIndex} carries ${b.data.byteLength} bytes for ${b.layerCount} layers of ${blockLayerBytes}`,
        );
      for (let l = b.layerStart; l < b.layerStart + b.layerCount; l++) {
        if (written[i * layers + l]) throw fail(`layer ${l} of block ${b.blockIndex} arrived twice`);
        written[i * layers + l] = 1;
      }
      mine.kv.write(
        blocks[i],
        b.layerStart,
        new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength),
      );
      bytes += b.data.byteLength;
    }
  } catch (err) {
    if (options.signal?.aborted) throw new EngineError('CANCELLED', 'the request was cancelled');
    if (err instanceof EngineError) throw err;
    const e = fromGrpcError(err);
    throw new EngineError(
      e.code === 'INVALID_ARGUMENT' || e.code === 'NOT_FOUND' ? 'GENERATION_FAILED' : e.code,
      `KV transfer from ${options.source} failed: ${e.message}`,
    );
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    call.cancel();
  }
  if (!header) throw fail('the stream ended before the header');
  if (written.some((w) => w === 0)) throw fail('the stream ended before every block arrived');
  return { header, bytes, ms: performance.now() - started };
}
