/**
 * Every rule a pooling request must keep, checked before anything is tokenized: each broken
 * rule is one INVALID_ARGUMENT naming the field (gateways map it to their 400/422), so no
 * client input reaches the native core unchecked. Token ids are checked against the
 * vocabulary here; lengths after tokenizing (engine/pooling/inputs.ts).
 */
import { invalidArgument } from '../errors.js';
import type { PoolingCard, PoolingRequest } from './types.js';

/** Inputs one request may carry (TEI's max_client_batch_size is 32; OpenAI's is 2,048). */
export const MAX_POOLING_INPUTS = 2048;
/** Characters of one text input: far beyond any model's tokens, bounded so tokenizing is. */
const MAX_INPUT_CHARS = 1 << 20;

export interface PoolingLimits {
  readonly card: PoolingCard;
  readonly vocabSize: number;
  /** The engine schedules by priority (--scheduling-policy priority): `priority` means something. */
  readonly byPriority: boolean;
}

const MAX_PRIORITY = 2 ** 31 - 1;

/** `field`: the request's own name of its inputs ('input', 'inputs', 'documents'...). */
export function validatePoolingRequest(req: PoolingRequest, limits: PoolingLimits, field = 'input'): void {
  const { card, vocabSize } = limits;
  if (!card.tasks.includes(req.task)) {
    throw invalidArgument(
      'task',
      `this model serves ${card.tasks.join(', ')}, not ${req.task}` +
        (card.tasks.length === 0
          ? ''
          : ` (a ${card.tasks.includes('embed') ? 'embedding' : 'scoring'} model)`),
    );
  }
  if (req.priority !== undefined) {
    const p: unknown = req.priority;
    if (typeof p !== 'number' || !Number.isInteger(p) || Math.abs(p) > MAX_PRIORITY)
      throw invalidArgument('priority', `must be an integer in [-${MAX_PRIORITY}, ${MAX_PRIORITY}]`);
    // vLLM's rule, as for generation: a priority means something only to the priority policy.
    if (p !== 0 && !limits.byPriority)
      throw invalidArgument(
        'priority',
        `must be 0 unless the engine schedules by priority (--scheduling-policy priority), got ${p}`,
      );
  }
  if (!Array.isArray(req.inputs) || req.inputs.length === 0)
    throw invalidArgument(field, 'must not be empty');
  if (req.inputs.length > MAX_POOLING_INPUTS)
    throw invalidArgument(
      field,
      `at most ${MAX_POOLING_INPUTS} inputs per request, got ${req.inputs.length}`,
    );
  req.inputs.forEach((input, i) => {
    const at = `${field}[${i}]`;
    if ('text' in input) {
      if (typeof input.text !== 'string') throw invalidArgument(at, 'must be a string');
      // OpenAI and TEI refuse an empty text (it would embed only the special tokens).
      if (input.text.length === 0) throw invalidArgument(at, 'must not be an empty string');
      if (input.text.length > MAX_INPUT_CHARS)
        throw invalidArgument(at, `longer than ${MAX_INPUT_CHARS} characters`);
      if (req.task === 'score') throw invalidArgument(at, 'a score needs a pair of texts');
    } else if ('ids' in input) {
      if (!Array.isArray(input.ids) || input.ids.length === 0)
        throw invalidArgument(at, 'must be a non-empty list of token ids');
      if (input.ids.length > card.maxInputTokens && req.truncate === undefined)
        throw invalidArgument(at, `${input.ids.length} tokens exceed the model's ${card.maxInputTokens}`);
      (input.ids as readonly unknown[]).forEach((id, j) => {
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize)
          throw invalidArgument(
            `${at}[${j}]`,
            `token id ${String(id)} is outside the vocabulary (0..${vocabSize - 1})`,
          );
      });
      if (req.task === 'score') throw invalidArgument(at, 'a score needs a pair of texts');
    } else if ('pair' in input) {
      const p = input.pair;
      if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string')
        throw invalidArgument(at, 'must be a pair of strings');
      if (p[0].length + p[1].length > MAX_INPUT_CHARS)
        throw invalidArgument(at, `longer than ${MAX_INPUT_CHARS} characters`);
      if (req.task !== 'score' && req.task !== 'classify')
        throw invalidArgument(at, `a pair of texts is not an input of ${req.task}`);
    } else {
      throw invalidArgument(at, 'must be a text, a list of token ids or a pair of texts');
    }
  });
  if (req.truncate !== undefined) {
    const { direction, maxTokens } = req.truncate;
    if (direction !== 'left' && direction !== 'right')
      throw invalidArgument('truncation_direction', "must be 'left' or 'right'");
    if (
      maxTokens !== undefined &&
      (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > card.maxInputTokens)
    )
      throw invalidArgument(
        'truncate_prompt_tokens',
        `must be an integer in 1..${card.maxInputTokens} (the model's limit), or -1`,
      );
  }
  if (req.dimensions !== undefined) {
    if (req.task !== 'embed') throw invalidArgument('dimensions', 'applies to embeddings only');
    if (!Number.isInteger(req.dimensions) || req.dimensions < 1)
      throw invalidArgument('dimensions', `must be a positive integer, got ${String(req.dimensions)}`);
    if (card.matryoshka.length === 0)
      throw invalidArgument(
        'dimensions',
        'this model does not support Matryoshka embeddings (it was not trained for a shorter vector)',
      );
    if (req.dimensions > card.dimensions)
      throw invalidArgument('dimensions', `${req.dimensions} is larger than the model's ${card.dimensions}`);
    if (card.matryoshka[0] !== 0 && !card.matryoshka.includes(req.dimensions))
      throw invalidArgument(
        'dimensions',
        `must be one of the model's Matryoshka dimensions ${card.matryoshka.join(', ')}`,
      );
  }
}
