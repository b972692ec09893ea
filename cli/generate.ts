/**
 * `prism generate`: run one prompt through the in-process engine and stream the text to
 * stdout. Diagnostics (load progress, --stats) go to stderr so stdout is only the text.
 */
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import { EngineError, type FinishEvent, type GenerateRequest } from '../engine/api.js';

export const help = `usage: prism generate [options]

Generates text with a model through the in-process engine and streams it to stdout.

options:
  --model PATH        GGUF file or Hugging Face model directory
                      (default: SmolLM2-135M-Instruct, fetched into models/ on first use)
  --prompt TEXT       the prompt (default: read from stdin when it is not a terminal)
  --chat              treat the prompt as a user message and apply the model's chat template
  --max-tokens N      most tokens to generate (default 256)
  --temperature T     sampling temperature, 0 = greedy (default 0)
  --top-p P           nucleus sampling cut in (0, 1] (default 1 = off)
  --top-k K           keep the K most likely tokens, 0 = off (default 0)
  --seed S            random seed for sampling (default: random, printed with --stats)
  --stats             print load time, prefill tok/s and decode tok/s to stderr
  -h, --help          show this help

exit codes: 0 done, 1 generation failed, 2 bad arguments.`;

class UsageError extends Error {}

interface Args {
  model?: string;
  prompt?: string;
  chat: boolean;
  maxTokens: number;
  temperature: number;
  topP?: number;
  topK?: number;
  seed?: number;
  stats: boolean;
}

function number(
  name: string,
  raw: string | undefined,
  integer: boolean,
  check: (v: number) => boolean,
  rule: string,
): number | undefined {
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || !check(v)) {
    throw new UsageError(`--${name}: ${rule}, got '${raw}'`);
  }
  return v;
}

export function parseGenerateArgs(argv: string[]): Args {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        model: { type: 'string' },
        prompt: { type: 'string' },
        chat: { type: 'boolean', default: false },
        'max-tokens': { type: 'string' },
        temperature: { type: 'string' },
        'top-p': { type: 'string' },
        'top-k': { type: 'string' },
        seed: { type: 'string' },
        stats: { type: 'boolean', default: false },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return {
    model: values.model,
    prompt: values.prompt,
    chat: values.chat ?? false,
    maxTokens:
      number('max-tokens', values['max-tokens'], true, (v) => v >= 1, 'must be an integer >= 1') ?? 256,
    temperature:
      number(
        'temperature',
        values.temperature,
        false,
        (v) => v >= 0 && v <= 100,
        'must be a number in [0, 100]',
      ) ?? 0,
    topP: number('top-p', values['top-p'], false, (v) => v > 0 && v <= 1, 'must be a number in (0, 1]'),
    topK: number('top-k', values['top-k'], true, (v) => v >= 0, 'must be an integer >= 0'),
    seed: number(
      'seed',
      values.seed,
      true,
      (v) => v >= 0 && v <= Number.MAX_SAFE_INTEGER,
      'must be a non-negative integer',
    ),
    stats: values.stats ?? false,
  };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Progress on stderr: a live percentage on a terminal; otherwise one line if loading is slow. */
function loadProgress(): { onProgress: (f: number) => void; done: () => void } {
  const tty = process.stderr.isTTY === true;
  let last = -1;
  const slow = setTimeout(() => {
    if (!tty) process.stderr.write('prism: loading the model...\n');
  }, 2000);
  return {
    onProgress: (f) => {
      const pct = Math.floor(f * 100);
      if (tty && pct !== last) {
        last = pct;
        process.stderr.write(`\rprism: loading the model ${pct}%`);
      }
    },
    done: () => {
      clearTimeout(slow);
      if (tty && last >= 0) process.stderr.write('\r\x1b[K');
    },
  };
}

export async function run(argv: string[]): Promise<number> {
  let args: Args;
  try {
    args = parseGenerateArgs(argv);
    if (args.prompt === undefined && process.stdin.isTTY)
      throw new UsageError('--prompt is required (or pipe the prompt into stdin)');
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`prism generate: ${e.message}\nRun \`prism generate --help\` for the options.\n`);
    return 2;
  }
  const prompt = args.prompt ?? (await readStdin());
  const modelPath = args.model ?? ensureDefaultModel();

  const t0 = performance.now();
  const progress = loadProgress();
  let engine;
  try {
    // Loaded here, not at the top: --help and argument errors must not need the native addon.
    const { loadEngine } = await import('../engine/load-engine.js');
    engine = await loadEngine(
      modelPath,
      {
        maxBatchSize: 4,
        maxIterTimes: Math.min(2560, Math.max(512, args.maxTokens)),
        kvCacheBytes: 256 << 20,
      },
      { onProgress: progress.onProgress },
    );
  } catch (e) {
    progress.done();
    process.stderr.write(`prism generate: cannot load ${modelPath}: ${(e as Error).message}\n`);
    return 1;
  }
  progress.done();
  const loadMs = performance.now() - t0;

  const request: GenerateRequest = {
    prompt: args.chat
      ? { kind: 'chat', messages: [{ role: 'user', content: prompt }] }
      : { kind: 'text', text: prompt },
    params: {
      maxNewTokens: args.maxTokens,
      temperature: args.temperature,
      ...(args.topP !== undefined ? { topP: args.topP } : {}),
      ...(args.topK !== undefined ? { topK: args.topK } : {}),
      ...(args.seed !== undefined ? { seed: args.seed } : {}),
    },
  };
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  let finish: FinishEvent | undefined;
  try {
    for await (const event of engine.generate(request, abort.signal)) {
      if (event.type === 'token') process.stdout.write(event.text);
      else finish = event;
    }
  } catch (e) {
    process.stderr.write(`\nprism generate: ${e instanceof EngineError ? e.message : String(e)}\n`);
    await engine.close();
    return e instanceof EngineError && e.code === 'INVALID_ARGUMENT' ? 2 : 1;
  } finally {
    process.off('SIGINT', onSigint);
  }
  process.stdout.write('\n');
  await engine.close();
  if (!finish) return 1;
  if (args.stats) {
    const t = finish.timings;
    const u = finish.usage;
    const prefillTps = t.prefillMs > 0 ? (u.promptTokens - u.cachedPromptTokens) / (t.prefillMs / 1000) : 0;
    const decodeTps =
      t.decodeMs > 0 && u.completionTokens > 1 ? (u.completionTokens - 1) / (t.decodeMs / 1000) : 0;
    process.stderr.write(
      [
        `load: ${loadMs.toFixed(0)} ms`,
        `prompt: ${u.promptTokens} tokens, prefill ${prefillTps.toFixed(1)} tok/s (${t.prefillMs.toFixed(1)} ms)`,
        `output: ${u.completionTokens} tokens, decode ${decodeTps.toFixed(1)} tok/s (${t.decodeMs.toFixed(1)} ms)`,
        `ttft: ${t.ttftMs.toFixed(1)} ms, finish: ${finish.reason}, seed: ${finish.seed}`,
      ].join('\n') + '\n',
    );
  }
  if (finish.reason === 'error') {
    process.stderr.write(`prism generate: ${finish.error ?? 'generation failed'}\n`);
    return 1;
  }
  return finish.reason === 'cancelled' ? 130 : 0;
}
