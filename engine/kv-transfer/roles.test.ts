import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError } from '../errors.js';
import { parseRole, Roles } from './roles.js';

test('each role takes its kinds of request and refuses the others as UNAVAILABLE', () => {
  const r = new Roles('prefill');
  r.check('prefill');
  assert.throws(
    () => r.check('whole'),
    (e: EngineError) => e.code === 'UNAVAILABLE' && /role is prefill/.test(e.message),
  );
  assert.throws(() => r.check('decode'), EngineError);
  const d = new Roles('decode');
  d.check('decode');
  assert.throws(() => d.check('prefill'), EngineError);
  const m = new Roles();
  for (const k of ['whole', 'prefill', 'decode'] as const) m.check(k);
});

test('a change drains: RoleSwitching while a refused request runs, a second change refused meanwhile', () => {
  const r = new Roles('mixed');
  r.set('decode', ['whole']);
  assert.deepEqual(r.stateWith(['whole', 'decode']), { role: 'decode', status: 'RoleSwitching' });
  assert.throws(() => r.set('prefill', ['whole']), /status is switching/);
  assert.deepEqual(r.stateWith(['decode']), { role: 'decode', status: 'RoleReady' });
  r.set('prefill', ['decode']);
  assert.equal(r.role, 'prefill');
});

test('parseRole names the field and the choices', () => {
  assert.equal(parseRole('decode'), 'decode');
  assert.throws(() => parseRole('flex'), /role: must be one of prefill, decode, mixed/);
});
