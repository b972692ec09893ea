import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopStringMatcher } from './stop-strings.js';

function feed(m: StopStringMatcher, pieces: string[]) {
  let out = '';
  for (const p of pieces) {
    const r = m.push(p);
    out += r.text;
    if (r.stopped) return { out, stopped: true };
  }
  return { out: out + m.flush(), stopped: false };
}

test('holds back a possible stop-string start and drops the stop string', () => {
  const m = new StopStringMatcher(['###']);
  assert.deepEqual(m.push('Hello #'), { text: 'Hello ', stopped: false });
  assert.deepEqual(m.push('#'), { text: '', stopped: false });
  assert.deepEqual(m.push('# tail'), { text: '', stopped: true });
});

test('a false start is released once it cannot be a stop string', () => {
  const m = new StopStringMatcher(['###']);
  assert.equal(m.push('a#').text, 'a');
  assert.equal(m.push('#b').text, '##b');
});

test('the earliest of several stop strings wins; include_stop_str keeps it', () => {
  assert.deepEqual(feed(new StopStringMatcher(['END', 'x']), ['abxcdEND']), { out: 'ab', stopped: true });
  assert.deepEqual(feed(new StopStringMatcher(['END'], true), ['ab', 'E', 'N', 'Dzz']), {
    out: 'abEND',
    stopped: true,
  });
});

test('held text is flushed when generation ends otherwise; no stops means pass-through', () => {
  assert.deepEqual(feed(new StopStringMatcher(['</s>']), ['hi <', '/']), { out: 'hi </', stopped: false });
  assert.deepEqual(new StopStringMatcher([]).push('anything'), { text: 'anything', stopped: false });
});
