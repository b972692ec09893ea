import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Engine, EngineStatus } from '../types.js';
import { applyStatus, member, pickLeastLoaded } from './picker.js';

const status = (running: number, waiting: number, freeBlocks: number) =>
  ({ running, waiting, freeBlocks }) as EngineStatus;

test('the least loaded engine wins, counting what was sent since its last report', () => {
  const a = member('a', {} as Engine);
  const b = member('b', {} as Engine);
  applyStatus(a, status(3, 1, 10));
  applyStatus(b, status(1, 0, 10));
  assert.equal(pickLeastLoaded([a, b]).address, 'b');
  assert.equal(pickLeastLoaded([a, b]).address, 'b');
  assert.equal(pickLeastLoaded([a, b]).address, 'b');
  // b: 1 reported + 3 sent = 4 = a's 4; ties go to more free blocks.
  applyStatus(a, status(3, 1, 20));
  assert.equal(pickLeastLoaded([a, b]).address, 'a');
});

test('an engine whose status poll failed is picked only when all failed', () => {
  const a = member('a', {} as Engine);
  const b = member('b', {} as Engine);
  applyStatus(a, null);
  applyStatus(b, status(50, 50, 0));
  assert.equal(pickLeastLoaded([a, b]).address, 'b');
  applyStatus(b, null);
  assert.ok(['a', 'b'].includes(pickLeastLoaded([a, b]).address));
});
