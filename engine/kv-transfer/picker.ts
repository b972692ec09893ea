/**
 * The coordinator's choice of engine: the least loaded by its last reported status (requests
 * running and waiting), plus what this coordinator sent it since that report (the status is
 * polled, so a burst would otherwise all land on the engine that looked idle); ties go to the
 * engine with more free KV blocks, then in turn. An engine whose poll failed is chosen only
 * when every engine's poll failed.
 */
import type { Engine, EngineStatus } from '../types.js';

export interface Member {
  readonly address: string;
  readonly engine: Engine;
  /** Requests running + waiting at the last poll; -1 until the first answer. */
  reported: number;
  freeBlocks: number;
  /** Requests this coordinator sent since the last poll. */
  sentSincePoll: number;
  /** The last poll failed. */
  down: boolean;
}

export function member(address: string, engine: Engine): Member {
  return { address, engine, reported: -1, freeBlocks: 0, sentSincePoll: 0, down: false };
}

export function applyStatus(m: Member, s: EngineStatus | null): void {
  m.sentSincePoll = 0;
  if (s === null) {
    m.down = true;
    return;
  }
  m.down = false;
  m.reported = s.running + s.waiting;
  m.freeBlocks = s.freeBlocks;
}

let turn = 0;

export function pickLeastLoaded(members: readonly Member[]): Member {
  if (members.length === 0) throw new Error('pickLeastLoaded: no engines');
  const start = turn++ % members.length;
  const rotated = [...members.slice(start), ...members.slice(0, start)];
  const load = (m: Member): number => Math.max(0, m.reported) + m.sentSincePoll;
  const up = rotated.filter((m) => !m.down);
  const pool = up.length > 0 ? up : rotated;
  let best = pool[0];
  for (const m of pool.slice(1)) {
    if (load(m) < load(best) || (load(m) === load(best) && m.freeBlocks > best.freeBlocks)) best = m;
  }
  best.sentSincePoll++;
  return best;
}
