/**
 * Jump-forward (SGLang's technique): where the grammar allows exactly one continuation (a
 * key, `": "`, `", "`), its tokens are appended without a sampling step each; the next step
 * computes them as one chunk (like a prefill) and samples after them.
 *
 * Which string: the one the grammar forced *before* the token just sampled (the worker sends
 * it with each mask). The step that sampled that token ran while the string was computed, so
 * using it keeps masks overlapped with the forward pass; the sampled token, allowed by the
 * mask, is a prefix of that string, and what follows it is appended.
 *
 * Which tokens: the appended text must be tokenized the way the model would have produced it,
 * and text already streamed cannot be taken back. So the sampled token and the forced text
 * are tokenized together; the split must keep the sampled token as the first token (else the
 * model would have written the boundary differently: no jump, the model samples on), and the
 * last token is left to the model (it might merge with the free text that follows, e.g.
 * ` "` + `$` → ` "$`). Special tokens never come out of a jump.
 */

/** What the boundary check needs from the tokenizer. */
export interface JumpTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[]): string;
  /** The token's text as it reads inside a sequence. */
  tokenText(id: number): string;
  isSpecial(id: number): boolean;
}

/**
 * The tokens to append after `sampled`, given `forced`, the string the grammar forced in the
 * state `sampled` was drawn from. Empty when there is nothing to jump over or the boundary does
 * not tokenize cleanly.
 */
export function forcedTokens(tok: JumpTokenizer, sampled: number, forced: string): number[] {
  if (forced.length === 0) return [];
  const head = tok.tokenText(sampled);
  // A token that is part of a multi-byte character, or that reaches past the forced text.
  if (head.length === 0 || head.includes('\uFFFD') || !forced.startsWith(head)) return [];
  if (forced.length === head.length) return [];
  const ids = tok.encode(forced, { addSpecialTokens: false });
  if (ids.length < 3 || ids[0] !== sampled) return [];
  const tail = ids.slice(1, -1);
  if (tail.some((id) => tok.isSpecial(id))) return [];
  // The appended tokens must spell the forced text exactly (no normalization on the way).
  if (!forced.startsWith(tok.decode([sampled, ...tail]))) return [];
  return tail;
}
