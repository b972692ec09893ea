/**
 * Tool-call parsing: the shapes every parser family returns.
 *
 * A family's `parse(text, final)` reads the model's whole output so far. With `final` false
 * the text may stop anywhere (a streamed prefix), and the result is a safe under-statement:
 * `content` holds only text that is certainly content (a possible start of a call marker or
 * whitespace that may precede a call is held back), `calls` only calls whose name is known,
 * each with the part of its arguments text that is certainly final. Parsing a longer prefix
 * only ever extends that result, which is what lets the streaming differ (stream.ts) emit the
 * monotonic difference and guarantees that the streamed deltas add up to the unary result.
 */

export interface ParsedCall {
  readonly name: string;
  /** The arguments as a JSON text (the model's own text of the arguments object where it wrote one). */
  readonly arguments: string;
}

export interface ParsedOutput {
  readonly content: string;
  readonly calls: readonly ParsedCall[];
}

export interface ParseContext {
  /** Names of the request's tools; families that mark a call only by a bare name line use them to tell a call from prose. */
  readonly toolNames: readonly string[];
}

export interface ToolParserFamily {
  /** The registry's canonical name (the first alias). */
  readonly name: string;
  /** Every name `tool_call_parser` may use for this family (MindIE's registered names). */
  readonly aliases: readonly string[];
  /** Which models use it (documentation, and what a reader of the registry sees). */
  readonly models: string;
  parse(text: string, final: boolean, context: ParseContext): ParsedOutput;
}

// The streamed and final call shapes are the engine API's own (engine/types.ts).
export type { ChatToolCall as ToolCall, ToolCallDelta } from '../types.js';
