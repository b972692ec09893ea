/**
 * Speculative decoding's counters, as vLLM names them (vllm:spec_decode_*): verify steps that
 * carried a draft, draft tokens proposed, draft tokens accepted, and accepted tokens per
 * draft position (position i counts the steps whose i-th draft token was accepted, so
 * acceptance falls off along the positions).
 */
export interface SpecDecodeStats {
  /** Proposer in use ('ngram' | 'draft' | 'layer-skip'). */
  readonly method: string;
  readonly numDrafts: number;
  readonly numDraftTokens: number;
  readonly numAcceptedTokens: number;
  /** [i] = accepted draft tokens at position i (0-based), up to num_speculative_tokens. */
  readonly acceptedPerPosition: readonly number[];
}

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
