/**
 * Speculative decoding with structured output: each constrained sequence's draft is walked
 * through its grammar (on the grammar thread, `GrammarMatcher.checkDraft`) and cut at the
 * first token the grammar refuses; the masks of the verified positions (the state after each
 * kept draft token) ride along with the draft into the step plan, so every position the
 * sampler verifies is masked as it would be without speculation. The matcher itself does not
 * move: once the step is verified, the accepted tokens and the sampled one are fed to it as
 * usual, which is the rollback of everything refused.
 */
import { matcherOf } from '../structured/grammar-backend.js';
import type { Sequence } from '../sequence.js';

export async function checkGrammarDrafts(seqs: readonly Sequence[]): Promise<void> {
  await Promise.all(
    seqs.map(async (seq) => {
      const g = matcherOf(seq);
      const draft = seq.draft;
      if (!g || !draft) return;
      if (g.error !== null || g.terminated) {
        seq.draft = null;
        return;
      }
      try {
        const r = await g.checkDraft(draft.tokens);
        if (seq.draft !== draft) return;
        if (r.taken === 0) {
          seq.draft = null;
          return;
        }
        draft.tokens = draft.tokens.slice(0, r.taken);
        draft.masks = [...r.masks];
        draft.jumps = g.jumpForward ? [...r.jumps] : null;
      } catch {
        // The grammar thread failed: no draft this step (the matcher reports the failure).
        seq.draft = null;
      }
    }),
  );
}
