/**
 * The connection-level limits on a real listener (startListener with a Koa app carrying
 * requestLimits): header size and count, slowloris header and body timeouts, idle keep-alive,
 * the connection cap, and that a response may take longer than the request timeout.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import Koa from 'koa';
import { DEFAULT_LIMITS, type GatewayLimits } from '../config.js';
import { readJsonBody } from './body.js';
import { mindieErrorFormat } from '../mindie/errors.js';
import { errorBoundary } from './error-boundary.js';
import { startListener, type RunningListener } from './listener.js';
import { checkJsonShape, requestLimits } from './limits.js';

const limits: GatewayLimits = {
  ...DEFAULT_LIMITS,
  maxHeaderBytes: 2048,
  maxHeaderCount: 20,
  headersTimeoutMs: 400,
  requestTimeoutMs: 800,
  keepAliveTimeoutMs: 300,
  maxConnections: 4,
};

let l: RunningListener;
let port: number;
before(async () => {
  const app = new Koa();
  app.use(requestLimits(limits));
  app.use(errorBoundary(mindieErrorFormat));
  app.use(async (ctx) => {
    if (ctx.path === '/slow') {
      // The response takes longer than requestTimeoutMs: only receiving the request is timed.
      await new Promise((r) => setTimeout(r, 1500));
      ctx.body = { ok: true };
      return;
    }
    ctx.body = ctx.method === 'POST' ? await readJsonBody(ctx, 1 << 20) : { ok: true };
  });
  l = await startListener('test', { host: '127.0.0.1', port: 0 }, app.callback(), limits, true);
  port = Number(new URL(l.url).port);
});
after(async () => {
  l.server.closeAllConnections();
  await l.close();
});

/** A raw TCP client: what it receives, and when the server closes it. */
function raw(send?: string): Promise<{ socket: Socket; done: Promise<{ data: string; ms: number }> }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const socket = connect(port, '127.0.0.1', () => {
      if (send) socket.write(send);
      let data = '';
      socket.on('data', (d) => (data += d.toString()));
      const done = new Promise<{ data: string; ms: number }>((res) =>
        socket.on('close', () => res({ data, ms: Date.now() - t0 })),
      );
      socket.on('error', () => {});
      resolve({ socket, done });
    });
    socket.once('error', reject);
  });
}

test('too many headers: 431 naming the limit', async () => {
  const headers: Record<string, string> = {};
  for (let i = 0; i < 25; i++) headers[`x-h${i}`] = 'v';
  const r = await fetch(l.url, { headers });
  assert.equal(r.status, 431);
  assert.match(((await r.json()) as { error: string }).error, /at most 20 headers.*maxHeaderCount/);
  assert.equal((await fetch(l.url, { headers: { 'x-one': 'v' } })).status, 200);
});

test('headers larger than maxHeaderBytes: 431 from Node', async () => {
  const { done } = await raw(`GET / HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(4000)}\r\n\r\n`);
  const { data } = await done;
  assert.match(data, /^HTTP\/1\.1 431/);
});

test('slowloris: headers never completed are cut after headersTimeoutMs', async () => {
  const { socket, done } = await raw('POST / HTTP/1.1\r\nHost: x\r\n');
  // Trickle a header byte now and then, as slowloris does; the deadline still holds.
  const trickle = setInterval(() => socket.write('x'), 100);
  const { data, ms } = await done;
  clearInterval(trickle);
  assert.match(data, /^HTTP\/1\.1 408/);
  assert.ok(ms >= 350 && ms < 2500, `closed after ${ms} ms`);
});

test('a body that never arrives is cut after requestTimeoutMs', async () => {
  const { done } = await raw(
    'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
  );
  const { data, ms } = await done;
  assert.ok(ms >= 700 && ms < 3000, `closed after ${ms} ms`);
  assert.match(data, /^HTTP\/1\.1 (408|4\d\d)|^$/);
});

test('a response may take longer than requestTimeoutMs', async () => {
  const r = await fetch(`${l.url}/slow`);
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { ok: true });
});

test('an idle keep-alive connection is closed after keepAliveTimeoutMs', async () => {
  const { done } = await raw('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const { data, ms } = await done;
  assert.match(data, /^HTTP\/1\.1 200/);
  assert.ok(ms >= 250 && ms < 2500, `closed after ${ms} ms`);
});

test('connections beyond the cap are closed at once; the cap frees as they go', async () => {
  const held = await Promise.all([0, 1, 2, 3].map(() => raw()));
  await new Promise((r) => setTimeout(r, 50));
  const extra = await raw('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const { data, ms } = await extra.done;
  assert.equal(data, '', 'no answer on a connection beyond the cap');
  assert.ok(ms < 300, `closed after ${ms} ms`);
  for (const h of held) h.socket.destroy();
  await Promise.all(held.map((h) => h.done));
  assert.equal((await fetch(l.url)).status, 200);
});

test('JSON shape: depth, list lengths and __proto__ keys are refused naming the field', () => {
  const small = { ...DEFAULT_LIMITS, maxJsonDepth: 4, maxArrayLength: 3, maxMessages: 2, maxTools: 1 };
  assert.doesNotThrow(() => checkJsonShape({ a: [[1]] }, small));
  assert.throws(
    () => checkJsonShape({ a: [[[[1]]]] }, small),
    /a\[0\]\[0\]\[0\]: nested deeper than 4 levels .*maxJsonDepth/,
  );
  assert.throws(
    () => checkJsonShape({ stop: [1, 2, 3, 4] }, small),
    /stop: at most 3 items, got 4 .*maxArrayLength/,
  );
  assert.throws(
    () => checkJsonShape({ messages: [{}, {}, {}] }, small),
    /messages: at most 2 items.*maxMessages/,
  );
  assert.throws(() => checkJsonShape({ tools: [{}, {}] }, small), /tools: at most 1 items.*maxTools/);
  assert.throws(
    () => checkJsonShape(JSON.parse('{"messages":[{"__proto__":{"x":1}}]}'), small),
    /messages\[0\]\.__proto__: is not allowed as a key/,
  );
  // `constructor` / `prototype` are plain data keys and pollute nothing.
  const v = JSON.parse('{"constructor":{"prototype":{"polluted":1}}}') as object;
  assert.doesNotThrow(() => checkJsonShape(v, small));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  // A very deep body is refused without recursion (no stack overflow).
  const deep = JSON.parse('['.repeat(100000) + ']'.repeat(100000)) as unknown;
  assert.throws(() => checkJsonShape(deep, DEFAULT_LIMITS), /nested deeper than 64/);
});

test('a body over the limits is a 4xx through readJsonBody', async () => {
  const r = await fetch(l.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"__proto__":{"admin":true}}',
  });
  assert.equal(r.status, 422);
  assert.match(((await r.json()) as { error: string }).error, /__proto__: is not allowed as a key/);
});
