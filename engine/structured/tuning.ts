/**
 * Structured output's two optimisations switched, and its mask waits watched, by whoever
 * builds the engine (a benchmark or a test): read at every step and request, so paired runs
 * flip them on one loaded engine. Engines built without one get the defaults.
 */
export interface StructuredTuning {
  /** Masks overlap the forward pass; undefined: where a core is left beside the native step's threads. */
  overlapMasks?: boolean;
  /** Jump-forward; undefined: on where the tokenizer encodes on the event loop. */
  jumpForward?: boolean;
  /** Per step that samples a constrained sequence: ms its critical path waited for masks. */
  onMaskWait?(ms: number): void;
}
