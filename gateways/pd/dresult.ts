/**
 * `GET /dresult` (service listener): MindIE's long-lived connection from the coordinator to a
 * decode instance, over which every result of the requests handed to it comes back, each
 * tagged with its request id. The frames are MindIE's (its DResultEventDispatcher):
 * `reqId:<id>\0<prefix><body>\0`, prefix `data:` for a token, `lastData:` for the request's
 * last result, `error:` for a failure; the body is the engine's event as JSON (TokenEvent /
 * FinishEvent of engine/types.ts; an error's `{code, message}`) — Prism's coordinator formats
 * them for its client's API family. A frame `reqId:\0keepAlive:\0` goes out after 5 s without
 * results. One holder at a time: a new `/dresult` ends the previous one's stream.
 */
import type { Context } from 'koa';
import type { DecodeResult } from '../../engine/api.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { clientGoneSignal, RawStreamWriter } from '../shared/sse.js';

const KEEP_ALIVE_MS = 5000;

function dresultFrame(r: DecodeResult): string | null {
  if ('held' in r) return null;
  if ('error' in r)
    return `reqId:${r.requestId}\0error:${JSON.stringify({ code: r.error.code, message: r.error.message })}\0`;
  const prefix = r.event.type === 'finish' ? 'lastData:' : 'data:';
  return `reqId:${r.requestId}\0${prefix}${JSON.stringify(r.event)}\0`;
}

export async function handleDResult(gw: GatewayContext, ctx: Context): Promise<void> {
  const signal = clientGoneSignal(ctx);
  const it = gw.engine.decodeResults(signal)[Symbol.asyncIterator]();
  // The engine's first result says the stream is ours; a refusal before it keeps its status.
  const first = await it.next();
  const out = new RawStreamWriter(ctx, 'text/event-stream');
  let last = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - last >= KEEP_ALIVE_MS) {
      out.write('reqId:\0keepAlive:\0');
      last = Date.now();
    }
  }, KEEP_ALIVE_MS / 5);
  timer.unref();
  try {
    for (let r = first; !r.done; r = await it.next()) {
      const frame = dresultFrame(r.value);
      if (frame === null) continue;
      out.write(frame);
      last = Date.now();
    }
  } catch {
    // Another coordinator took the stream, or the engine went away: the connection ends.
  } finally {
    clearInterval(timer);
    await it.return?.(undefined);
    out.end();
  }
}
