/**
 * `npm run bench:tools`: the cost of grammar-forced tool calls on the default model, in one
 * run, A/B/C interleaved per round, medians of the rounds:
 *
 *  - free text: the same question without tools, `maxTokens` tokens (ignore_eos);
 *  - same prompt: the prompt text an `auto` request renders (built-in tool prompt) sent as a
 *    text prompt, so no grammar: isolates what the `auto` grammar costs;
 *  - auto: tools offered with `tool_choice: "auto"` — the built-in tool prompt, and the
 *    triggered grammar (free text until `<tool_call>`) masking every token; `maxTokens`
 *    tokens (ignore_eos);
 *  - forced: `tool_choice: "required"` with one call (`parallel_tool_calls: false`) — the
 *    whole output is the call the grammar allows, so it ends when the call does.
 *
 * Per request: first-token latency (submit to the first token event: prompt, grammar compile
 * — cached after the warm-up — and the first step) and decode tokens/s (tokens after the
 * first over the time after the first). Concurrency 1, then `--concurrency` requests at once
 * (aggregate output tokens/s).
 *
 * Usage: npm run bench:tools [-- --rounds 5 --tokens 48 --concurrency 8]
 */
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import { MINDIE_CONTEXT_LIMITS } from '../engine/options.js';
import { loadTokenizer } from '../engine/tokenizer/index.js';
import { EngineChat } from '../engine/tools/engine-chat.js';
import type { ChatTool, Engine, GenerateRequest } from '../engine/types.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '48' },
    threads: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '8' },
  },
});
const rounds = Number(args.rounds);
const maxTokens = Number(args.tokens);
const threads = Number(args.threads);
const concurrency = Number(args.concurrency);

const tools: ChatTool[] = [
  {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
    },
  },
  {
    name: 'get_time',
    description: 'Current time in a time zone',
    parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] },
  },
];
const QUESTION = 'What is the weather in Paris?';

type Mode = 'free' | 'same-prompt' | 'auto' | 'forced';
const MODES: readonly Mode[] = ['free', 'same-prompt', 'auto', 'forced'];

function request(mode: Mode, seed: number): GenerateRequest {
  const messages = [{ role: 'user' as const, content: QUESTION }];
  // A forced call ends with the call (one call: parallel_tool_calls false); room enough for it.
  const maxNewTokens = mode === 'forced' ? Math.max(maxTokens, 160) : maxTokens;
  const params = { maxNewTokens, temperature: 0.7, seed, ignoreEos: mode !== 'forced' };
  if (mode === 'free') return { prompt: { kind: 'chat', messages }, params };
  if (mode === 'same-prompt') return { prompt: { kind: 'text', text: toolPromptText }, params };
  return {
    prompt: {
      kind: 'chat',
      messages,
      tools,
      toolChoice: mode === 'auto' ? 'auto' : 'required',
      parallelToolCalls: false,
    },
    params,
  };
}

interface Sample {
  ttftMs: number;
  tokens: number;
  decodeTps: number;
  wallMs: number;
}

async function one(engine: Engine, r: GenerateRequest): Promise<Sample> {
  const t0 = performance.now();
  let first = 0;
  let last = 0;
  let tokens = 0;
  for await (const ev of engine.generate(r)) {
    if (ev.type === 'token') {
      last = performance.now();
      if (tokens === 0) first = last;
      tokens += ev.tokenIds.length;
    } else if (ev.type === 'finish' && ev.reason === 'error') throw new Error(ev.error ?? 'failed');
  }
  return {
    ttftMs: first - t0,
    tokens,
    decodeTps: tokens > 1 ? (tokens - 1) / ((last - first) / 1000) : NaN,
    wallMs: performance.now() - t0,
  };
}

/** `n` requests at once; aggregate output tokens/s and the median first-token latency. */
async function batch(engine: Engine, mode: Mode, n: number, seed: number): Promise<Sample> {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: n }, (_, i) => one(engine, request(mode, seed + i))));
  const wall = performance.now() - t0;
  const tokens = all.reduce((s, x) => s + x.tokens, 0);
  return {
    ttftMs: median(all.map((x) => x.ttftMs)),
    tokens,
    decodeTps: tokens / (wall / 1000),
    wallMs: wall,
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}
const f1 = (x: number) => x.toFixed(1);

const modelPath = ensureDefaultModel();
// The limits these runs were measured with (MindIE's defaults), not the model's 8,192-token context.
const engine = await loadEngine(modelPath, {
  maxBatchSize: 16,
  threads,
  kvCacheBytes: 128 << 20,
  ...MINDIE_CONTEXT_LIMITS,
});
const tokenizer = await loadTokenizer(modelPath);
const toolPromptText = new EngineChat(tokenizer, undefined, (await engine.info()).architecture).render({
  kind: 'chat',
  messages: [{ role: 'user', content: QUESTION }],
  tools,
  toolChoice: 'auto',
}).text;
try {
  // Warm-up: grammar thread start and compiles, prefix cache of the three prompts.
  for (const m of MODES) await one(engine, request(m, 0));
  const rows: string[] = [];
  for (const n of [1, concurrency]) {
    const samples = new Map<Mode, Sample[]>(MODES.map((m) => [m, []]));
    for (let r = 0; r < rounds; r++)
      for (const m of MODES)
        samples
          .get(m)!
          .push(n === 1 ? await one(engine, request(m, 1 + r)) : await batch(engine, m, n, 100 * r));
    const free = median(samples.get('free')!.map((s) => s.decodeTps));
    const same = median(samples.get('same-prompt')?.map((s) => s.decodeTps) ?? []);
    for (const m of MODES) {
      const s = samples.get(m)!;
      const tps = median(s.map((x) => x.decodeTps));
      const rel = `${(tps / free).toFixed(2)} | ${(tps / same).toFixed(2)}`;
      rows.push(
        `| ${n} | ${m} | ${f1(median(s.map((x) => x.tokens)))} | ${f1(tps)} | ${rel} | ${f1(median(s.map((x) => x.ttftMs)))} | ${s.map((x) => f1(x.decodeTps)).join(', ')} |`,
      );
      console.error(`concurrency ${n} ${m}: tok/s ${s.map((x) => f1(x.decodeTps)).join(', ')}`);
    }
  }
  console.log(
    `\nDefault model, ${threads} threads, ${rounds} rounds, up to ${maxTokens} tokens, temperature 0.7.\n` +
      `Concurrency 1: decode tok/s of one request (tokens after the first); concurrency ${concurrency}: aggregate output tok/s.\n`,
  );
  console.log(
    '| concurrency | mode | tokens (median) | tok/s (median) | vs free | vs same prompt | first token ms (median) | tok/s per round |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  console.log(rows.join('\n'));
} finally {
  await engine.close();
}
