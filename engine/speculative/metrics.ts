/**
 * Speculative decoding's counters (the record the status RPC reports is SpecDecodeStats,
 * engine/types.ts), counted as verify steps finish.
 */
import type { SpecDecodeStats } from '../types.js';

export class SpecDecodeMetrics {
  numDrafts = 0;
  numDraftTokens = 0;
  numAcceptedTokens = 0;
  readonly acceptedPerPosition: number[];

  constructor(
    readonly method: string,
    maxDraft: number,
  ) {
    this.acceptedPerPosition = new Array<number>(maxDraft).fill(0);
  }

  /** One verify step of a sequence: `drafted` tokens proposed, the first `accepted` kept. */
  record(drafted: number, accepted: number): void {
    if (drafted <= 0) return;
    this.numDrafts++;
    this.numDraftTokens += drafted;
    this.numAcceptedTokens += accepted;
    for (let i = 0; i < accepted && i < this.acceptedPerPosition.length; i++) this.acceptedPerPosition[i]++;
  }

  snapshot(): SpecDecodeStats {
    return {
      method: this.method,
      numDrafts: this.numDrafts,
      numDraftTokens: this.numDraftTokens,
      numAcceptedTokens: this.numAcceptedTokens,
      acceptedPerPosition: [...this.acceptedPerPosition],
    };
  }
}
