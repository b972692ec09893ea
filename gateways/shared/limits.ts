/**
 * Limits that protect the process from what clients send: the shape of a JSON body (nesting
 * depth, array lengths, `__proto__` keys), the number of request headers, and the connection
 * timeouts and cap of a listener. The body size limit is read by body.ts while the body streams in.
 */
import type { Server } from 'node:http';
import type { Middleware } from 'koa';
import { DEFAULT_LIMITS, type GatewayLimits } from '../config.js';
import { HttpError } from './http-error.js';

/** Where a field path is printed: `messages[3].content`. */
function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/** Top-level list fields with a limit of their own (the rest get maxArrayLength). */
function listLimit(path: string, limits: GatewayLimits): [number, string] {
  switch (path) {
    case 'messages':
      return [limits.maxMessages, 'maxMessages'];
    case 'tools':
    case 'functions':
      return [limits.maxTools, 'maxTools'];
    default:
      return [limits.maxArrayLength, 'maxArrayLength'];
  }
}

/**
 * Checks a parsed body against the shape limits; throws a 4xx naming the field and the limit.
 * Iterative (an explicit stack), so no body can overflow the JS stack here; JSON.parse itself
 * builds the value without recursion limits of its own.
 *
 * `__proto__` as a key is refused: JSON.parse makes it an own data property (harmless), but any
 * later `Object.assign` or bracket assignment from it would replace an object's prototype.
 * `constructor` and `prototype` stay ordinary data keys (JSON Schemas may use them as property
 * names); nothing in the gateways merges a body into an existing object.
 */
export function checkJsonShape(value: unknown, limits: GatewayLimits): void {
  const stack: [unknown, string, number][] = [[value, '', 1]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!;
    // JSON has no infinities, but a literal beyond the double range (1e309) parses to one, which
    // JSON Schema's "integer" accepts and no engine field can hold.
    if (typeof v === 'number' && !Number.isFinite(v)) {
      throw new HttpError(
        'validation',
        `${path || 'request body'}: the number is too large to represent`,
        path || undefined,
      );
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > limits.maxJsonDepth) {
      throw new HttpError(
        'validation',
        `${path || 'request body'}: nested deeper than ${limits.maxJsonDepth} levels (ServerConfig.limits.maxJsonDepth)`,
        path || undefined,
      );
    }
    if (Array.isArray(v)) {
      const [max, name] = listLimit(path, limits);
      if (v.length > max) {
        throw new HttpError(
          'validation',
          `${path || 'request body'}: at most ${max} items, got ${v.length} (ServerConfig.limits.${name})`,
          path || undefined,
        );
      }
      for (let i = 0; i < v.length; i++) stack.push([v[i], join(path, i), depth + 1]);
    } else {
      for (const key of Object.keys(v)) {
        const at = join(path, key);
        if (key === '__proto__') throw new HttpError('validation', `${at}: is not allowed as a key`, at);
        stack.push([(v as Record<string, unknown>)[key], at, depth + 1]);
      }
    }
  }
}

/** Refuses a request with more headers than allowed (431, before any handler runs). */
function headerCountLimit(limits: GatewayLimits): Middleware {
  return async (ctx, next) => {
    const count = ctx.req.rawHeaders.length / 2;
    if (count > limits.maxHeaderCount) {
      ctx.status = 431;
      ctx.body = {
        error: `request headers: at most ${limits.maxHeaderCount} headers, got ${count} (ServerConfig.limits.maxHeaderCount)`,
        error_type: 'Request Header Fields Too Large',
      };
      return;
    }
    await next();
  };
}

/**
 * Timeouts and the connection cap of one listener. `headersTimeout` and `requestTimeout` bound
 * how long a client may take to send a request (slowloris); once the request is in, a stream
 * may run as long as generation takes. `maxConnections` closes connections beyond the cap at
 * once (MindIE refuses the request after 3 × maxLinkNum).
 */
export function serverLimitOptions(limits: GatewayLimits): Record<string, number> {
  return {
    maxHeaderSize: limits.maxHeaderBytes,
    // Node refuses a headers timeout longer than the request timeout.
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks the two timeouts above (its default, 30 s, would let a slow
    // client hold a connection that much longer than configured).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, limits.headersTimeoutMs / 2)),
  };
}

export function applyConnectionLimits(server: Server, limits: GatewayLimits, capConnections: boolean): void {
  // Node stops parsing headers past maxHeadersCount; one more than the limit lets
  // headerCountLimit see that there were too many instead of silently dropping them.
  server.maxHeadersCount = limits.maxHeaderCount + 1;
  if (capConnections) server.maxConnections = limits.maxConnections;
}

/** Where body.ts finds the limits of the listener a request came in on. */
export function limitsOf(state: Record<string, unknown>): GatewayLimits {
  return (state.prismLimits as GatewayLimits | undefined) ?? DEFAULT_LIMITS;
}

/** Makes the listener's limits visible to body.ts and refuses too many headers. */
export function requestLimits(limits: GatewayLimits): Middleware {
  const headers = headerCountLimit(limits);
  return async (ctx, next) => {
    ctx.state.prismLimits = limits;
    await headers(ctx, next);
  };
}
