/**
 * The decode side of a split request: before its sequence joins the scheduler, the KV its
 * prompt needs is pulled from the prefill engine (TransferKv, transfer-client.ts) into fresh
 * blocks, after the prefix this engine's cache already holds; the sequence then takes over
 * those blocks and starts where the KV ends. A handed-off request's tokens generated on the
 * prefill engine join its choice first, as if sampled here (the prefill engine streamed them).
 */
import type { KvPool } from '../kv-pool.js';
import { EngineError } from '../errors.js';
import type { ExtensionHost } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { Sequence } from '../sequence.js';
import type { Peers } from './peers.js';
import { pullKv, type PulledHeader } from './transfer-client.js';
import type { RemotePrefill } from '../pd-types.js';
import type { KvStore } from '../runner.js';
import { remoteTarget, type KvCompat } from './types.js';

/** A hand-off's tokens generated on the prefill engine, and the first one's logprob. */
export interface HandOffPart {
  readonly outputs: readonly number[];
  readonly firstLogprob: number;
}

/** What the pulls count (the engine's status reports them). */
export interface PullCounts {
  transfersIn: number;
  bytesIn: number;
  transferMsIn: number;
  tokensIn: number;
  failures: number;
}

export interface DecodePullDeps {
  readonly blocks: KvPool;
  readonly kv: KvStore;
  readonly compat: KvCompat;
  readonly peers: Peers;
  /** Deadline of one pull (MindIE's kv_trans_timeout). */
  readonly transferTimeoutMs: number;
  readonly maxSeqLen: number;
  readonly counts: PullCounts;
  readonly host: Pick<ExtensionHost, 'enqueue' | 'abort' | 'afterTokens'>;
}

/**
 * Pulls the KV `seq`'s prompt needs (what the prefix cache does not hold already), then
 * queues it. `signal` stops the pull (the request was cancelled).
 */
export async function pullThenEnqueue(
  d: DecodePullDeps,
  req: LiveRequest,
  spec: RemotePrefill & { handOff?: HandOffPart },
  seq: Sequence,
  signal: AbortSignal,
): Promise<void> {
  const source = remoteTarget(spec.remoteHost, spec.remotePort);
  const blocks = d.blocks;
  const cached = blocks.findCachedPrefix(seq);
  // One page per block (check() refuses other layouts): the cached blocks are their pages.
  const cachedPages = cached.blocks.map((pages) => pages[0]);
  blocks.hold(cachedPages);
  if (spec.handOff) prime(d, req, seq, spec.handOff);
  let fresh: number[] = [];
  const promptLen = seq.promptLen;
  const place = (h: PulledHeader): number[] => {
    if (h.tokenIds.length !== promptLen || h.tokenIds.some((t, i) => t !== seq.tokens[i]))
      throw new EngineError(
        'GENERATION_FAILED',
        'the two engines made different prompt tokens of the request',
      );
    const got = blocks.takeLoose(h.numBlocks);
    if (!got)
      throw new EngineError(
        'RESOURCE_EXHAUSTED',
        `no room for the request's KV: ${h.numBlocks} blocks needed, ${blocks.freeBlocks} free`,
      );
    fresh = got;
    return got;
  };
  try {
    const r = await pullKv(
      d.peers.get(source),
      { leaseId: spec.remoteRequestId, firstBlock: cached.blocks.length },
      { compat: d.compat, kv: d.kv },
      place,
      { deadlineMs: d.transferTimeoutMs, signal, source },
    );
    d.counts.transfersIn++;
    d.counts.bytesIn += r.bytes;
    d.counts.transferMsIn += r.ms;
    d.counts.tokensIn += promptLen - cached.blocks.length * blocks.blockSize;
  } catch (e) {
    blocks.unhold([...cachedPages, ...fresh]);
    if (seq.aborted) return; // cancelled: the request has already ended
    d.counts.failures++;
    const error = e instanceof EngineError ? e : new EngineError('GENERATION_FAILED', String(e));
    const mismatch = /cannot share KV|different prompt tokens/.test(error.message);
    if (spec.recompute && !mismatch) {
      d.host.enqueue(seq); // computed here from its prompt (and prefix cache)
      return;
    }
    d.host.abort(req, { message: error.message, fault: error });
    return;
  }
  if (seq.aborted) {
    blocks.unhold([...cachedPages, ...fresh]);
    return;
  }
  // The sequence takes over the references: its table holds the local prefix, then the pulled blocks.
  seq.blockTable = [...cachedPages, ...fresh];
  seq.blockKeys = [...cached.keys];
  // A handed-off request continues after its first token; a pulled one computes its last
  // prompt token here (its logits give the first token), as vLLM's decode side does.
  seq.numComputed = spec.handOff ? promptLen : promptLen - 1;
  seq.cachedPromptTokens = Math.min(seq.numComputed, promptLen);
  blocks.registerFull(seq);
  d.host.enqueue(seq);
}

/** The prefill engine's tokens join the choice (and the other extensions) without an event. */
function prime(d: DecodePullDeps, req: LiveRequest, seq: Sequence, h: HandOffPart): void {
  const c = req.choices[seq.index];
  const now = performance.now();
  h.outputs.forEach((t, i) => {
    seq.tokens.push(t);
    const atLimit = c.tokenIds.length + 1 >= req.maxNew || seq.tokens.length >= d.maxSeqLen;
    c.accept(t, i === 0 ? h.firstLogprob : 0, now, atLimit);
  });
  d.host.afterTokens(seq, [...h.outputs]);
}
