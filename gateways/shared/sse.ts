/**
 * Server-sent events on a raw Node response, and the abort signal that ties an engine request
 * to its HTTP connection: when the client goes away before the answer is complete, the signal
 * fires and the engine cancels the request (frees its KV blocks).
 */
import type { Context } from 'koa';

/** Aborts when the client closes the connection before the response finished. */
export function clientGoneSignal(ctx: Context): AbortSignal {
  const controller = new AbortController();
  const res = ctx.res;
  const onClose = (): void => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  };
  res.once('close', onClose);
  return controller.signal;
}

export class SseWriter {
  private closed = false;
  constructor(private readonly ctx: Context) {
    // Koa must not touch the response any more: we write it ourselves, frame by frame.
    ctx.respond = false;
    ctx.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    ctx.res.flushHeaders();
    ctx.res.once('close', () => {
      this.closed = true;
    });
  }

  get isClosed(): boolean {
    return this.closed || this.ctx.res.destroyed;
  }

  /** One `data:` event; objects are JSON-encoded. */
  data(payload: unknown, event?: string): void {
    if (this.isClosed) return;
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    // A payload with newlines needs one `data:` line per line (the SSE framing rule).
    const lines = text
      .split('\n')
      .map((l) => `data: ${l}`)
      .join('\n');
    this.ctx.res.write(event ? `event: ${event}\n${lines}\n\n` : `${lines}\n\n`);
  }

  end(): void {
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    this.closed = true;
  }
}

/**
 * A raw chunked stream for protocols that are not SSE (the old vLLM api_server: JSON
 * objects each followed by a NUL byte).
 */
export class RawStreamWriter {
  constructor(
    private readonly ctx: Context,
    contentType: string,
  ) {
    ctx.respond = false;
    ctx.res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
    ctx.res.flushHeaders();
  }

  write(chunk: string): void {
    if (!this.ctx.res.writableEnded && !this.ctx.res.destroyed) this.ctx.res.write(chunk);
  }

  end(): void {
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
  }
}
