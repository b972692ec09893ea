import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePdHeaders } from './mindie-headers.js';

const parse = (h: Record<string, string>) => parsePdHeaders((n) => h[n]);

test('no PD header: an ordinary request', () => {
  assert.equal(parse({}), null);
});

test('req-type prefill with req-id and d-target: a prefill that hands off', () => {
  const pd = parse({
    'req-type': 'prefill',
    'req-id': '0x1a2b',
    'd-target': '127.0.0.1;50052',
    'is-recompute': 'true',
  });
  assert.deepEqual(pd, {
    requestId: '0x1a2b',
    spec: { kind: 'remoteDecode', decodeTarget: '127.0.0.1;50052', recompute: true },
  });
  const bare = parse({ 'req-type': 'prefill', 'req-id': 'ff', 'd-target': '10.0.0.2' });
  assert.ok(bare && 'spec' in bare && bare.spec.kind === 'remoteDecode');
  assert.equal(bare.spec.decodeTarget, '10.0.0.2:50051');
});

test('each broken header is refused naming it (MindIE 400)', () => {
  const cases: [Record<string, string>, string][] = [
    [{ 'req-id': 'ff', 'd-target': 'h;1' }, 'req-type'],
    [{ 'req-type': 'decode', 'req-id': 'ff', 'd-target': 'h;1' }, 'req-type'],
    [{ 'req-type': 'prefill', 'd-target': 'h;1' }, 'req-id'],
    [{ 'req-type': 'prefill', 'req-id': 'not-hex', 'd-target': 'h;1' }, 'req-id'],
    [{ 'req-type': 'prefill', 'req-id': 'ff' }, 'd-target'],
    [{ 'req-type': 'prefill', 'req-id': 'ff', 'd-target': 'nowhere:port' }, 'd-target'],
    [{ 'req-type': 'prefill', 'req-id': 'ff', 'd-target': 'h;1', 'is-recompute': 'yes' }, 'is-recompute'],
  ];
  for (const [h, field] of cases) {
    const pd = parse(h);
    assert.ok(pd && 'error' in pd, JSON.stringify(h));
    assert.equal(pd.error.kind, 'bad_request');
    assert.equal(pd.error.field, field);
  }
});
