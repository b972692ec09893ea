import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../block-manager.js';
import { LeaseTable } from './lease-table.js';

function setup(ttlMs = 60_000): { bm: BlockManager; leases: LeaseTable; blocks: number[] } {
  const bm = new BlockManager(8, 4, true);
  const blocks = bm.takeLoose(3)!;
  const leases = new LeaseTable((b) => bm.unhold(b), ttlMs);
  return { bm, leases, blocks };
}

const lease = (id: string, blocks: number[]) => ({
  id,
  blocks,
  tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9],
  firstToken: 10,
  firstLogprob: -0.5,
  seed: 7,
});

test('a lease keeps its blocks out of the free list until its one transfer ends', () => {
  const { bm, leases, blocks } = setup();
  leases.add(lease('a', blocks));
  assert.equal(bm.freeBlocks, 5);
  assert.equal(leases.heldBlocks, 3);
  const h = leases.begin('a');
  assert.ok(h);
  assert.equal(leases.begin('a'), undefined, 'one transfer per lease');
  leases.cancel('a'); // nothing to cancel: the running transfer owns it
  assert.equal(bm.freeBlocks, 5, 'never freed under a reader');
  leases.end(h);
  assert.equal(bm.freeBlocks, 8);
  assert.equal(leases.heldBlocks, 0);
});

test('cancel frees a lease no transfer has begun; a later lease may reuse the id', () => {
  const { bm, leases, blocks } = setup();
  leases.add(lease('a', blocks));
  assert.equal(leases.cancel('a'), undefined);
  assert.equal(bm.freeBlocks, 8);
  assert.equal(leases.has('a'), false);
  const again = bm.takeLoose(2)!;
  leases.add(lease('a', again));
  const h = leases.begin('a')!;
  leases.add(lease('a', bm.takeLoose(1)!)); // same id while the first is read
  leases.end(h);
  assert.equal(leases.heldBlocks, 1);
  leases.close();
  assert.equal(bm.freeBlocks, 8);
});

test('an unpulled lease expires and frees its blocks', async () => {
  const { bm, leases, blocks } = setup(30);
  leases.add(lease('a', blocks));
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(leases.has('a'), false);
  assert.equal(bm.freeBlocks, 8);
});
