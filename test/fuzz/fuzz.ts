/**
 * A property-based HTTP fuzzer for the gateways (fast-check): generated and mutated bodies,
 * headers, methods and paths sent to every route of every family (routes.ts). Each reply is
 * checked against the invariants of docs/reliability.md: 2xx or 4xx (a few documented
 * exceptions below), 4xx bodies in the family's error shape, never a stack trace, never a hang;
 * the server stays up and its memory stays bounded.
 *
 * Cases are drawn with `fc.sample` from one seed and sent by a few concurrent workers, so a
 * failure is reproduced by its seed and index (`npm run fuzz -- --seed S --cases N`).
 */
import { request as httpRequest, Agent } from 'node:http';
import fc from 'fast-check';
import { jsonSchemas } from './json-schemas.js';
import { familyOfPath, routes, type Family, type ListenerName, type Route } from './routes.js';

interface FuzzCase {
  readonly listener: ListenerName;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
  /** What was done to the body, for the report (e.g. `field messages.0 := "NaN"`). */
  readonly what: string;
}

// ---------------------------------------------------------------- values

/** Raw JSON number texts JSON.stringify cannot produce (they go in through a placeholder). */
const RAW_NUMBERS = [
  '1e309',
  '-1e309',
  '-0',
  '1E400',
  '123456789012345678901234567890',
  '0.0000001e-400',
  '2e-5',
];
const RAW = (i: number): string => `\u0001RAW${i}\u0001`;

const weirdScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1,
    2,
    1e308,
    -1e308,
    2 ** 53 + 1,
    2 ** 31,
    4294967296,
    0.5,
    -0.5,
    '',
    ' ',
    'NaN',
    'Infinity',
    '-Infinity',
    '1e309',
    'null',
    'true',
    '0x10',
    '\u0000',
    '\ud800',
    '\uffff',
    '<|endoftext|>',
    '{{ 7*7 }}',
    '../../etc/passwd',
    '__proto__',
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.nat({ max: RAW_NUMBERS.length - 1 }).map((i) => RAW(i)),
);

const weird: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: weirdScalar },
  { weight: 1, arbitrary: fc.constantFrom([], {}, [[]], [{}], { '': null }, [null], ['']) },
  { weight: 2, arbitrary: fc.array(weirdScalar, { maxLength: 6 }) },
  { weight: 2, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), weirdScalar, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    // Enormous lists: of numbers (token ids) or strings.
    arbitrary: fc
      .tuple(fc.integer({ min: 1000, max: 150_000 }), fc.constantFrom(1, 'a', { role: 'user', content: 'x' }))
      .map(([n, item]) => Array.from({ length: n }, () => item)),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 200_000 }).map((n) => 'x'.repeat(n)),
  },
);

// ---------------------------------------------------------------- bodies

function setPath(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let cur: Record<string, unknown> = obj;
  for (const p of parts.slice(0, -1)) {
    const next = cur[p];
    if (next === null || typeof next !== 'object') cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]] = value;
}

function deletePath(obj: Record<string, unknown>, dotted: string): void {
  const parts = dotted.split('.');
  let cur: unknown = obj;
  for (const p of parts.slice(0, -1)) {
    if (cur === null || typeof cur !== 'object') return;
    cur = (cur as Record<string, unknown>)[p];
  }
  if (cur !== null && typeof cur === 'object')
    delete (cur as Record<string, unknown>)[parts[parts.length - 1]];
}

const serialize = (v: unknown): string =>
  JSON.stringify(v).replace(/"\\u0001RAW(\d)\\u0001"/g, (_, i: string) => RAW_NUMBERS[Number(i)]);

type BodyMaker = (
  base: Record<string, unknown> | undefined,
  fields: readonly string[],
) => fc.Arbitrary<[Buffer | undefined, string]>;

const text = (s: string): Buffer => Buffer.from(s, 'utf-8');

/** One body for a route: its plausible body, mutated one of many ways (or replaced). */
const bodyFor: BodyMaker = (base, fields) => {
  const b = base ?? {};
  const fieldNames = fields.length > 0 ? fields : ['inputs'];
  const mutated = fc
    .array(fc.tuple(fc.constantFrom(...fieldNames), weird), { minLength: 1, maxLength: 3 })
    .map((edits): [Buffer, string] => {
      const v = structuredClone(b);
      for (const [f, w] of edits) setPath(v, f, w);
      return [text(serialize(v)), `fields ${edits.map(([f]) => f).join(',')}`];
    });
  const deleted = fc.constantFrom(...fieldNames).map((f): [Buffer, string] => {
    const v = structuredClone(b);
    deletePath(v, f);
    return [text(serialize(v)), `delete ${f}`];
  });
  const unknown = fc
    .dictionary(fc.string({ minLength: 1, maxLength: 12 }), weird, { minKeys: 1, maxKeys: 3 })
    .map((extra): [Buffer, string] => [text(serialize({ ...b, ...extra })), 'unknown fields']);
  const duplicated = fc.tuple(fc.constantFrom(...fieldNames), weirdScalar).map(([f, w]): [Buffer, string] => {
    const key = f.split('.')[0];
    const s = serialize(b);
    // The same key twice: JSON.parse keeps the last; the first one is the weird one.
    return [text(`{${JSON.stringify(key)}:${serialize(w)},${s.slice(1)}`), `duplicate ${key}`];
  });
  const deep = fc
    .tuple(fc.integer({ min: 20, max: 120_000 }), fc.boolean(), fc.constantFrom(...fieldNames))
    .map(([n, arrays, f]): [Buffer, string] => {
      const nest = arrays ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n);
      const key = f.split('.')[0];
      return [text(`{${JSON.stringify(key)}:${nest}}`), `deep ${n}`];
    });
  const randomJson = fc
    .jsonValue({ maxDepth: 4 })
    .map((v): [Buffer, string] => [text(JSON.stringify(v)), 'random json']);
  const rawText = fc
    .oneof(
      fc.constantFrom(
        '',
        ' ',
        'null',
        '[]',
        '{}',
        '"text"',
        '{',
        '{"inputs":',
        'inputs=Hi',
        '\u0000',
        '{"a":1}{"b":2}',
        'NaN',
        '[1,]',
      ),
      fc.string({ maxLength: 100 }),
    )
    .map((s): [Buffer, string] => [text(s), 'raw text']);
  const truncated = fc.nat().map((i): [Buffer, string] => {
    const s = serialize(b);
    return [text(s.slice(0, i % Math.max(1, s.length))), 'truncated'];
  });
  const badUtf8 = fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.nat())
    .map(([bytes, at]): [Buffer, string] => {
      const s = Buffer.from(serialize(b));
      // Bytes that are not valid UTF-8 (lone continuation bytes, overlongs, 0xFF), inside a string or anywhere.
      const bad = Buffer.from(bytes.map((x) => 0x80 | (x & 0x7f)));
      const pos = at % (s.length + 1);
      return [
        Buffer.concat([s.subarray(0, pos), bad, Buffer.from([0xc0, 0xaf, 0xff]), s.subarray(pos)]),
        'invalid utf-8',
      ];
    });
  const inStringUtf8 = fc.uint8Array({ minLength: 1, maxLength: 6 }).map((bytes): [Buffer, string] => {
    const v = structuredClone(b);
    setPath(v, fieldNames[0], 'PLACEHOLDER');
    const s = serialize(v);
    const i = s.indexOf('PLACEHOLDER');
    return [
      Buffer.concat([
        Buffer.from(s.slice(0, i)),
        Buffer.from(bytes.map((x) => 0x80 | x)),
        Buffer.from(s.slice(i + 11)),
      ]),
      'invalid utf-8 in a string',
    ];
  });
  // A generated JSON Schema (json-schemas.ts) where the route takes one: response_format (with
  // strict or not), guided_json, TGI's parameters.grammar.
  const schemaField = fieldNames.includes('response_format')
    ? 'response_format'
    : fieldNames.includes('parameters.grammar')
      ? 'parameters.grammar'
      : null;
  const withSchema = fc
    .tuple(jsonSchemas, fc.boolean(), fc.boolean())
    .map(([schema, strict, guided]): [Buffer, string] => {
      const v = structuredClone(b);
      if (schemaField === 'response_format' && guided) setPath(v, 'guided_json', schema);
      else if (schemaField === 'response_format')
        setPath(v, 'response_format', { type: 'json_schema', json_schema: { name: 's', schema, strict } });
      else setPath(v, 'parameters.grammar', { type: 'json', value: schema });
      return [text(serialize(v)), `schema ${schemaField ?? ''}`];
    });
  return fc.oneof(
    { weight: schemaField ? 3 : 0, arbitrary: withSchema },
    { weight: 8, arbitrary: mutated },
    { weight: 2, arbitrary: fc.constant<[Buffer, string]>([text(serialize(b)), 'plausible']) },
    { weight: 2, arbitrary: deleted },
    { weight: 2, arbitrary: unknown },
    { weight: 2, arbitrary: duplicated },
    { weight: 1, arbitrary: deep },
    { weight: 2, arbitrary: randomJson },
    { weight: 2, arbitrary: rawText },
    { weight: 1, arbitrary: truncated },
    { weight: 1, arbitrary: badUtf8 },
    { weight: 1, arbitrary: inStringUtf8 },
    { weight: 1, arbitrary: fc.constant<[Buffer | undefined, string]>([undefined, 'no body']) },
  );
};

// ---------------------------------------------------------------- headers, paths, methods

const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);
const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,60}$/);
const headers: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      'content-type': fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'application/json; charset=latin1',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        '',
        '*/*',
      ),
      accept: fc.constantFrom('application/json', 'text/event-stream', '*/*', 'text/html', ''),
      'content-encoding': fc.constantFrom('gzip', 'identity', 'br'),
      'x-request-id': headerValue,
      authorization: fc.constantFrom('Bearer ', 'Bearer x', 'Basic Zm9vOmJhcg==', 'x'),
      extra: fc.dictionary(headerName, headerValue, { maxKeys: 4 }),
    },
    { requiredKeys: ['content-type'] },
  )
  .map(({ extra, ...h }) => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...extra, ...h })) {
      if (v !== undefined && !['host', 'content-length', 'transfer-encoding', 'connection'].includes(k))
        out[k] = v;
    }
    return out;
  });

const modelName = (served: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(served) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.constantFrom('..', '.', '%', '%zz', '%00', 'a%2Fb', 'x'.repeat(3000), served + '/versions/1'),
      ),
    },
  );

/** A route's path, sometimes mangled: suffixes, bad escapes, queries, doubled slashes. */
function pathFor(route: Route, model: string): fc.Arbitrary<string> {
  const enc = (m: string): string => {
    if (/^[%.]/.test(m) || m.includes('/versions/')) return m;
    return encodeURIComponent(m);
  };
  const base = route.path(enc(model));
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(base) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '/',
          '/x',
          '//',
          '/..',
          '/%zz',
          '/%00',
          '?a=1&a=2',
          '?stream=true',
          '?%',
          '#frag',
          '/versions/2',
        )
        .map((s) => base + s),
    },
    { weight: 1, arbitrary: fc.constant(base.replace(/\//g, '//')) },
    { weight: 1, arbitrary: fc.constant(base.toUpperCase()) },
  );
}

const otherMethod = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND');

function caseArbitrary(served: string): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(fc.constantFrom(...routes), modelName(served), fc.nat({ max: 19 }))
    .chain(([route, model, methodRoll]) =>
      fc.record({
        route: fc.constant(route),
        path: pathFor(route, model),
        method: methodRoll === 0 ? otherMethod : fc.constant(route.method),
        headers,
        body:
          route.method === 'POST'
            ? bodyFor(route.body?.(model), route.fields ?? [])
            : fc.oneof(
                { weight: 5, arbitrary: fc.constant<[Buffer | undefined, string]>([undefined, 'no body']) },
                { weight: 1, arbitrary: bodyFor({}, ['x']) },
              ),
      }),
    )
    .map(({ route, path, method, headers: h, body: [body, what] }) => ({
      listener: route.listener,
      method,
      path,
      headers: h,
      body: method === 'GET' || method === 'HEAD' ? undefined : body,
      what,
    }));
}

// ---------------------------------------------------------------- invariants

/** A stack frame (`at f (/path/x.js:1:2)`), an internal module path, or a V8 error dump. */
const STACK =
  /\bat [^\n]*[(\s](\/|node:|file:)[^\n]*:\d+:\d+|node_modules\/|node:internal|\bTypeError: |\bRangeError: |\bReferenceError: /;

/**
 * The LoRA management routes answer plain text by design, with MindIE's statuses and texts
 * (docs/api.md, "LoRA adapters"): 503 "Input invalid lora name" / "Input invalid lora path"
 * for a name or path that breaks the rule, 503 while dynamic loading is off, else 2xx/4xx.
 */
const LORA_ROUTE = /^\/v1\/(un)?load_lora_adapter\/?$/i;
const LORA_503 = /^(Input invalid lora (name|path)$|dynamic LoRA loading is off: )/;

function loraProblem(status: number, contentType: string, body: string): string | undefined {
  const plain = /^text\/plain/.test(contentType);
  if (status === 503 && plain && LORA_503.test(body)) return undefined;
  if (status >= 500 || status < 200 || (status >= 300 && status < 400)) return `status ${status}`;
  // Node's own 431/408 (before any handler) carry no body.
  if ((status === 431 || status === 408) && body === '') return undefined;
  if (status >= 400 && !plain && !/json/.test(contentType))
    return `4xx with content-type ${contentType || '(none)'}`;
  return undefined;
}

/** Statuses outside 2xx/4xx that a route may answer by design. */
function allowedOther(c: FuzzCase, status: number): boolean {
  const p = c.path.split(/[?#]/)[0];
  // Triton: readiness is 503 while the engine is busy.
  if (status === 503 && /^\/v2\/health\/ready\/?$/i.test(p)) return true;
  return false;
}

/** The reason a reply breaks an invariant, or undefined. */
function violation(c: FuzzCase, status: number, contentType: string, body: string): string | undefined {
  if (STACK.test(body)) return 'stack trace or source path in the body';
  if (LORA_ROUTE.test(c.path.split(/[?#]/)[0])) return loraProblem(status, contentType, body);
  const ok2xx = status >= 200 && status < 300;
  const ok4xx = status >= 400 && status < 500;
  if (!ok2xx && !ok4xx && !allowedOther(c, status)) return `status ${status}`;
  if (!ok4xx || c.method === 'HEAD') return undefined;
  // Node's own 431/408 (before any handler) carry no body.
  if ((status === 431 || status === 408) && body === '') return undefined;
  if (!/json/.test(contentType)) return `4xx with content-type ${contentType || '(none)'}`;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return '4xx body is not JSON';
  }
  return shapeProblem(familyOfPath(c.path), json);
}

function shapeProblem(family: Family, json: unknown): string | undefined {
  const j = json as Record<string, unknown> | null;
  if (j === null || typeof j !== 'object') return 'error body is not an object';
  if (family === 'anthropic') {
    const e = j.error as Record<string, unknown> | undefined;
    if (j.type !== 'error' || !e || typeof e.type !== 'string' || typeof e.message !== 'string')
      return 'Anthropic error is not {"type": "error", "error": {type, message}}';
    return undefined;
  }
  if (family === 'ollama')
    return typeof j.error === 'string' ? undefined : 'Ollama error is not {"error": string}';
  if (family === 'openai') {
    const e = j.error as Record<string, unknown> | undefined;
    if (!e || typeof e !== 'object') return 'OpenAI error without an error object';
    if (typeof e.message !== 'string' || typeof e.type !== 'string')
      return 'OpenAI error without message/type';
    if (!('param' in e) || !('code' in e)) return 'OpenAI error without param/code';
    return undefined;
  }
  if (typeof j.error !== 'string' || typeof j.error_type !== 'string')
    return `${family} error is not {"error": string, "error_type": string}`;
  return undefined;
}

// ---------------------------------------------------------------- runner

export interface FuzzTarget {
  readonly service: string;
  readonly management: string;
  readonly metrics: string;
}

interface FuzzFailure {
  readonly index: number;
  readonly case: Omit<FuzzCase, 'body'> & { bodyPreview: string };
  readonly problem: string;
  readonly status?: number;
  readonly replyPreview?: string;
}

export interface FuzzReport {
  readonly seed: number;
  readonly cases: number;
  readonly byStatus: Record<string, number>;
  readonly failures: FuzzFailure[];
  readonly seconds: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 16 });

function send(
  base: string,
  c: FuzzCase,
  timeoutMs: number,
): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: c.method,
        path: c.path,
        headers: { ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}) },
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks).toString('utf-8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no complete reply within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(c.body);
  });
}

export interface FuzzOptions {
  readonly cases: number;
  readonly seed: number;
  readonly servedModel: string;
  readonly concurrency?: number;
  readonly timeoutMs?: number;
  /** Statuses to list with the failures although they keep the invariants (to investigate them). */
  readonly reportStatuses?: readonly number[];
  /** Called every `every` cases (progress, RSS samples). */
  readonly onProgress?: (done: number) => void;
}

export async function runFuzz(target: FuzzTarget, o: FuzzOptions): Promise<FuzzReport> {
  const t0 = Date.now();
  const arbitrary = caseArbitrary(o.servedModel);
  // One draw per case from seed + index: reproducible one by one, and no body is held longer
  // than its request (some are megabytes).
  const draw = (index: number): FuzzCase => fc.sample(arbitrary, { seed: o.seed + index, numRuns: 1 })[0];
  const byStatus: Record<string, number> = {};
  const failures: FuzzFailure[] = [];
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < o.cases) {
      const index = next++;
      const c = draw(index);
      const fail = (problem: string, status?: number, reply?: string): void => {
        failures.push({
          index,
          case: {
            listener: c.listener,
            method: c.method,
            path: c.path.slice(0, 200),
            headers: c.headers,
            what: c.what,
            bodyPreview: (c.body?.toString('utf-8') ?? '').slice(0, 300),
          },
          problem,
          status,
          replyPreview: reply?.slice(0, 300),
        });
      };
      try {
        const r = await send(target[c.listener], c, o.timeoutMs ?? 30000);
        byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
        const problem = violation(c, r.status, r.contentType, r.body);
        if (problem) fail(problem, r.status, r.body);
        else if (o.reportStatuses?.includes(r.status)) fail(`reported status ${r.status}`, r.status, r.body);
      } catch (err) {
        byStatus.error = (byStatus.error ?? 0) + 1;
        fail(`no reply: ${(err as Error).message}`);
      }
      done++;
      o.onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 4 }, worker));
  return { seed: o.seed, cases: o.cases, byStatus, failures, seconds: (Date.now() - t0) / 1000 };
}

export function closeFuzzAgent(): void {
  agent.destroy();
}
