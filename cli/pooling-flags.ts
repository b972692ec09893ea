/**
 * The pooling flags of `prism serve` and `prism engine` (engine/pooling/): which task a model
 * is served for and the Matryoshka widths its embeddings may be cut to.
 */
import type { PoolingOptions } from '../engine/pooling/options.js';

export const poolingFlagOptions = {
  task: { type: 'string' },
  'matryoshka-dimensions': { type: 'string' },
} as const;

export const poolingHelp = `  --task TASK           auto (default: an encoder, or a folder with sentence-transformers'
                        pooling, or a GGUF with pooling_type, serves embeddings / scores),
                        embed, score (a decoder as Qwen3-Reranker), or generate
  --matryoshka-dimensions LIST
                        widths requests may cut embeddings to (\`dimensions\`): 64,128,256,
                        or any (default: config.json's matryoshka_dimensions, else none)`;

const TASKS = ['auto', 'generate', 'embed', 'score'] as const;

/** The flags' pooling options, or throws `usage(message)` naming the flag and the rule. */
export function poolingFromFlags(
  values: { task?: string; 'matryoshka-dimensions'?: string },
  usage: (message: string) => Error,
): PoolingOptions | undefined {
  const out: {
    task?: PoolingOptions['task'];
    matryoshkaDimensions?: PoolingOptions['matryoshkaDimensions'];
  } = {};
  if (values.task !== undefined) {
    const task = TASKS.find((t) => t === values.task);
    if (!task) throw usage(`--task: must be one of ${TASKS.join(', ')}, got '${values.task}'`);
    out.task = task;
  }
  const dims = values['matryoshka-dimensions'];
  if (dims !== undefined) {
    if (dims === 'any') out.matryoshkaDimensions = 'any';
    else {
      const list = dims.split(',').map((d) => d.trim());
      if (list.length === 0 || list.some((d) => !/^[1-9]\d{0,5}$/.test(d)))
        throw usage(
          `--matryoshka-dimensions: must be 'any' or a comma-separated list of positive integers, got '${dims}'`,
        );
      out.matryoshkaDimensions = list.map(Number).sort((a, b) => a - b);
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
