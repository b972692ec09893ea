/**
 * Incremental detokenization (the prefix-offset / read-offset technique of vLLM and TGI).
 *
 * Decoding one token at a time is wrong in two ways: a token may hold only part of a
 * multi-byte UTF-8 character (byte-level BPE, SentencePiece byte fallback), and decoders
 * treat the first token of a sequence specially (SentencePiece strips the leading space), so
 * decode(suffix) differs from the suffix of decode(all). So each push decodes a short window
 * twice — `ids[prefix..read)` (already emitted) and `ids[prefix..]` — and emits what the
 * longer one adds, unless it ends in U+FFFD (an incomplete character: wait for more bytes).
 * After an emission the window moves up, so the work per token stays O(1) amortised.
 */
export interface IncrementalDetokenizer {
  /** Adds one token id; returns the newly completed text (possibly ""), never a broken character. */
  push(id: number): string;
  /** Ends the stream: returns whatever text was held back (an unfinished character decodes as U+FFFD). */
  flush(): string;
  /** All text emitted so far. */
  readonly text: string;
}

/** Decodes a slice of ids as the full tokenizer would. */
export type DecodeSlice = (ids: readonly number[]) => string;

const REPLACEMENT = '\uFFFD';
/**
 * A UTF-8 character is at most 4 bytes, so held-back text that still ends in U+FFFD after
 * this many more tokens is not waiting for bytes: it is invalid output, emitted as is (keeps
 * a stream of garbage bytes from growing the window without bound).
 */
const MAX_HELD_TOKENS = 8;

export class Detokenizer implements IncrementalDetokenizer {
  private readonly ids: number[] = [];
  /** Start of the decode window: tokens before it are never decoded again. */
  private prefixOffset = 0;
  /** End of the already-emitted part of the window. */
  private readOffset = 0;
  private emitted = '';

  constructor(private readonly decode: DecodeSlice) {}

  get text(): string {
    return this.emitted;
  }

  push(id: number): string {
    this.ids.push(id);
    return this.advance(false);
  }

  flush(): string {
    return this.advance(true);
  }

  private advance(final: boolean): string {
    if (this.readOffset >= this.ids.length) return '';
    const prefixText = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decode(this.ids.slice(this.prefixOffset));
    const held = this.ids.length - this.readOffset;
    const incomplete = fullText.endsWith(REPLACEMENT) && !final && held < MAX_HELD_TOKENS;
    // Equal lengths: the new tokens decode to nothing yet (e.g. a skipped special token).
    if (incomplete || fullText.length <= prefixText.length) return '';
    const delta = fullText.slice(prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.emitted += delta;
    return delta;
  }
}
