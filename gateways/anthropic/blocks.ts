/** What every Anthropic content block is read with: its known fields only, and its string fields. */
import { invalid } from '../shared/http-error.js';

export type Block = Record<string, unknown> & { type?: unknown };

/** Fields a block may carry besides its own: prompt caching hints (the prefix cache is automatic). */
const COMMON_BLOCK_FIELDS = ['type', 'cache_control'];

/** Refuses (400) any field of the block that is neither common nor one of `allowed`, naming it. */
export function onlyFields(block: Block, allowed: readonly string[], at: string): void {
  for (const key of Object.keys(block)) {
    if (!COMMON_BLOCK_FIELDS.includes(key) && !allowed.includes(key))
      throw invalid(`${at}.${key}`, 'is not a known field');
  }
}

export function stringField(block: Block, key: string, at: string): string {
  const v = block[key];
  if (typeof v !== 'string') throw invalid(`${at}.${key}`, 'must be a string');
  return v;
}
