/**
 * `npm run bench:spec`: speculative decoding (a proposer: ngram by default) against no speculation, in
 * one run, on the default model; the same model file, the same prompt token ids, greedy.
 *
 *  1. Output tokens/s per task and concurrency, Prism without and with `--speculative ngram`
 *     (engines in this process, medians), beside an A/A control: a second engine without
 *     speculation (A'), run in the same rounds, so each row carries its own noise floor.
 *     The three run in each round in an order that cycles through all six, so that a drift
 *     of the machine's speed (another process starting) falls on every side alike. The same ratio
 *     for the decode part alone (each request's tokens after its first over the time after
 *     its first: the prompt's prefill, paid alike on both sides, left out), the acceptance
 *     rate (accepted / proposed draft tokens), the mean accepted length (accepted draft tokens
 *     per verify step) and whether both outputs were token-for-token the same. Tasks:
 *     input-grounded (rewrite a passage, edit code, extract JSON quoting the input, under a
 *     json_schema constraint on both sides) and open-ended chat.
 *  2. The peer: llama.cpp's own prompt-lookup speculation (node-llama-cpp's
 *     InputLookupTokenPredictor) against none, one sequence, the same prompt ids.
 *  3. At a size model's shape (random weights accept nothing, so acceptance cannot be measured
 *     there): the native step's cost for 1 + k tokens of one sequence against 1 token, for
 *     every k up to the cap, and the speed-up the default model's measured acceptance per
 *     draft position would give at the best of those k.
 *
 * Usage: npm run bench:spec [-- --rounds 3 --tokens 96 --k 5 --no-peer --size 3b-q5_k_m
 *        --method ngram|layer-skip|draft|none --draft-layers N --draft-model PATH --fixed-k
 *        --tasks rewrite,chat,json,code]
 * (--k: the cap on draft tokens, num_speculative_tokens; absent: the engine's default.)
 * (--tasks: only the tasks whose name contains one of the words, e.g. more rounds on two.)
 * (--method none: the B side is another engine without speculation, a second A/A control.)
 * (--no-control: no A' engine, two sides only, as before the control column.)
 * (--fixed-k: adaptive k off, every proposal verified in full: the proposer's acceptance.)
 * (--instances N: each side loaded N times, in the order A A' B, B A' A, A A' B, …; round r
 *  runs instance r mod N of each side, in order ⌊r / N⌋ of the six (6·N rounds: every
 *  instance in every order of the sides once). Two
 *  engines loaded alike differ by a few percent for the whole of a process on the
 *  development CPU (the first loaded the slowest there), which the rotation of orders
 *  cannot cancel. Mirrored loading spreads the first and last places over A; it does not
 *  remove the difference (A'/A still read 1.02 in 48-round runs): --same-engine does.)
 * (--per-round: every round's tok/s per side and instance on stderr.)
 * (--same-engine: no engine without speculation is loaded; A and A' are requests with
 *  numSpeculativeTokens 0 sent to B's own engines, so the three sides share engines, memory
 *  and threads and differ only in what speculation does per step. With --instances N the
 *  rounds still rotate over N such engines.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { InputLookupTokenPredictor, type Token } from 'node-llama-cpp';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import {
  DEFAULT_FIXED_SPECULATIVE_TOKENS,
  DEFAULT_SPECULATIVE_TOKENS,
} from '../engine/speculative/options.js';
import type { Constraint, GenerateRequest, SpecDecodeStats } from '../engine/types.js';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  type StepPlan,
} from '../native/native.js';
import { loadPrebuiltLlamaModel } from './engine/llamacpp.js';
import { fmt, median, medianInterval, nowMs, percentile } from './stats.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '96' },
    /** Most draft tokens per sequence and step; absent: the engine's default. */
    k: { type: 'string' },
    /** Only the tasks whose name contains one of these (comma-separated), e.g. chat,json. */
    tasks: { type: 'string' },
    threads: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '1,16' },
    /** Skip llama.cpp's lookup speculation. */
    'no-peer': { type: 'boolean', default: false },
    /** The size model (models/sizes/NAME.gguf) whose verify-step cost is measured; '' skips it. */
    size: { type: 'string', default: '3b-q5_k_m' },
    /** The proposer on the B side. */
    method: { type: 'string', default: 'ngram' },
    'draft-layers': { type: 'string' },
    'draft-model': { type: 'string' },
    'fixed-k': { type: 'boolean', default: false },
    /** No A/A control engine (A'): only A and B, a third less time per round. */
    'no-control': { type: 'boolean', default: false },
    /** Engines loaded per side, in mirrored orders (see the usage note). */
    instances: { type: 'string', default: '1' },
    /** A and A' are requests that do not speculate, sent to B's engines (see the usage note). */
    'same-engine': { type: 'boolean', default: false },
    /** Each round's tok/s per side and instance, on stderr (C is A'). */
    'per-round': { type: 'boolean', default: false },
  },
});
const control = !args['no-control'];
const method = args.method as 'ngram' | 'layer-skip' | 'draft' | 'none';
if (!['ngram', 'layer-skip', 'draft', 'none'].includes(method))
  throw new Error(`--method: ngram, layer-skip, draft or none, got ${method}`);
const rounds = Number(args.rounds);
const maxTokens = Number(args.tokens);
/** The cap: --k, else the engine's default (with the adaptive k; 5 with --fixed-k). */
const K =
  args.k !== undefined
    ? Number(args.k)
    : args['fixed-k']
      ? DEFAULT_FIXED_SPECULATIVE_TOKENS
      : DEFAULT_SPECULATIVE_TOKENS;
const threads = Number(args.threads);
const instances = Number(args.instances);
const sameEngine = args['same-engine'];
if (sameEngine && method === 'none')
  throw new Error('--same-engine: the B side must speculate (not --method none)');
if (!(Number.isInteger(instances) && instances >= 1))
  throw new Error(`--instances: a whole number of engines per side, at least 1, got ${args.instances}`);
const concurrencies = args.concurrency.split(',').map(Number);

const PASSAGES = [
  'The old lighthouse stood at the edge of the cliff for more than a century. Sailors trusted its light, and the keeper climbed its hundred steps every evening to wind the clockwork that turned the lens.',
  'Every morning the baker opened his shop at six and sold bread until noon. In the afternoon he prepared the dough for the next day, and on Sundays he baked cakes for the village fair.',
  'Photosynthesis turns light, water and carbon dioxide into sugar and oxygen. It happens in the chloroplasts of plant cells, where chlorophyll absorbs mostly red and blue light.',
  'The committee will meet on Tuesday to review the annual budget proposal. Members should read the report beforehand and send their questions to the secretary by Monday evening.',
];
const CODE = [
  'function total(items) {\n  let total = 0;\n  for (const item of items) {\n    total += item.price * item.count;\n  }\n  return total;\n}',
  'def average(values):\n    total = 0\n    for value in values:\n        total += value\n    return total / len(values)',
];
const PEOPLE = [
  ['Ada Lovelace', 'London', 'mathematician', 1815],
  ['Marie Curie', 'Warsaw', 'physicist', 1867],
  ['Alan Turing', 'London', 'computer scientist', 1912],
  ['Grace Hopper', 'New York', 'computer scientist', 1906],
] as const;
const TOPICS = [
  'a dragon who is afraid of fire',
  'the deep sea',
  'a robot learning to paint',
  'winter in a small town',
];

const chat = (user: string) => `<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`;
const PERSON_SCHEMA = JSON.stringify({
  type: 'object',
  properties: {
    name: { type: 'string' },
    city: { type: 'string' },
    occupation: { type: 'string' },
    born: { type: 'integer' },
  },
  required: ['name', 'city', 'occupation', 'born'],
});

interface Task {
  readonly name: string;
  readonly grounded: boolean;
  readonly prompts: readonly string[];
  readonly constraint?: Constraint;
}

const ALL_TASKS: readonly Task[] = [
  {
    name: 'rewrite a passage',
    grounded: true,
    prompts: PASSAGES.map((p) => chat(`Repeat this passage word for word:\n\n${p}`)),
  },
  {
    name: 'edit code',
    grounded: true,
    prompts: CODE.map((c) =>
      chat(`Rename the variable total to sum in this code and print the whole code:\n\n${c}`),
    ),
  },
  {
    name: 'extract JSON (json_schema)',
    grounded: true,
    prompts: PEOPLE.map(([n, c, o, y]) =>
      chat(
        `Extract name, city, occupation and born as JSON: "${n}, the ${o}, was born in ${c} in ${y}. ${n} is remembered in ${c}."`,
      ),
    ),
    constraint: { kind: 'json_schema', schema: PERSON_SCHEMA },
  },
  {
    name: 'open-ended chat',
    grounded: false,
    prompts: TOPICS.map((t) => chat(`Write a short story about ${t}.`)),
  },
];

const taskFilter = args.tasks?.split(',').map((t) => t.trim().toLowerCase());
const TASKS = taskFilter
  ? ALL_TASKS.filter((t) => taskFilter.some((f) => t.name.toLowerCase().includes(f)))
  : ALL_TASKS;
if (TASKS.length === 0)
  throw new Error(`--tasks: no task matches ${args.tasks} (${ALL_TASKS.map((t) => t.name).join('; ')})`);

interface Run {
  tokS: number;
  /** Tokens after the first per second of each request, averaged: the decode part alone (no prefill, same on both sides). */
  decodeTokS: number;
  outputs: (readonly number[])[];
}

async function runBatch(
  e: EngineCore,
  ids: readonly number[][],
  constraint?: Constraint,
  /** Requests that do not speculate (numSpeculativeTokens 0): A and A' under --same-engine. */
  noSpec = false,
): Promise<Run> {
  const t0 = nowMs();
  const outputs = await Promise.all(
    ids.map(async (p) => {
      const req: GenerateRequest = {
        prompt: { kind: 'tokens', ids: [...p] },
        params: { temperature: 0, maxNewTokens: maxTokens, ...(noSpec ? { numSpeculativeTokens: 0 } : {}) },
        ...(constraint ? { constraint } : {}),
      };
      let out: readonly number[] = [];
      let first = -1;
      for await (const ev of e.generate(req)) {
        if (ev.type === 'token' && first < 0) first = nowMs();
        if (ev.type === 'finish') out = ev.tokenIds;
      }
      const decodeMs = nowMs() - first;
      return { out, decode: first >= 0 && out.length > 1 ? ((out.length - 1) / decodeMs) * 1000 : 0 };
    }),
  );
  const ms = nowMs() - t0;
  const n = outputs.reduce((a, o) => a + o.out.length, 0);
  const decodeTokS = outputs.reduce((a, o) => a + o.decode, 0) / outputs.length;
  return { tokS: (n / ms) * 1000, decodeTokS, outputs: outputs.map((o) => o.out) };
}

/** A: no speculation; C: the A/A control, a second engine without it (A'); B: speculation. */
type Side = 'A' | 'C' | 'B';

/** Every order of `xs`, in a fixed sequence: round r runs the sides in order r mod n!. */
function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [[...xs]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

const loadavg = () => (existsSync('/proc/loadavg') ? readFileSync('/proc/loadavg', 'utf8').trim() : 'n/a');

const NO_SPEC = { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0 } as SpecDecodeStats;

function sumStats(all: readonly SpecDecodeStats[]): SpecDecodeStats {
  const perPos: number[] = [];
  for (const s of all) (s.acceptedPerPosition ?? []).forEach((n, j) => (perPos[j] = (perPos[j] ?? 0) + n));
  return {
    ...all[0],
    numDrafts: all.reduce((a, s) => a + s.numDrafts, 0),
    numDraftTokens: all.reduce((a, s) => a + s.numDraftTokens, 0),
    numAcceptedTokens: all.reduce((a, s) => a + s.numAcceptedTokens, 0),
    acceptedPerPosition: perPos,
  };
}

/**
 * A list of per-round ratios as `median [95% interval of the median]` (order statistics,
 * stats.ts), or with the quartiles where there are too few rounds for the interval.
 */
function spread(xs: readonly number[]): string {
  const iv = medianInterval(xs);
  if (iv) return `${fmt(median(xs), 3)} [${fmt(iv.lo, 3)}, ${fmt(iv.hi, 3)}]`;
  return `${fmt(median(xs), 3)} (quartiles ${fmt(percentile(xs, 25), 3)}, ${fmt(percentile(xs, 75), 3)})`;
}

function specDelta(a: SpecDecodeStats, b: SpecDecodeStats) {
  const drafts = b.numDrafts - a.numDrafts;
  const proposed = b.numDraftTokens - a.numDraftTokens;
  const accepted = b.numAcceptedTokens - a.numAcceptedTokens;
  const perPos = (b.acceptedPerPosition ?? []).map((n, j) => n - (a.acceptedPerPosition?.[j] ?? 0));
  return { drafts, proposed, accepted, perPos };
}

function specOptions(base: EngineOptions): EngineOptions {
  if (method === 'none') return base;
  return {
    ...base,
    speculative: {
      method,
      numSpeculativeTokens: K,
      ...(args['fixed-k'] ? { adaptive: false } : {}),
      ...(args['draft-layers'] ? { draftLayers: Number(args['draft-layers']) } : {}),
      ...(args['draft-model'] ? { draftModel: args['draft-model'] } : {}),
    },
  };
}

async function main(): Promise<void> {
  const modelPath = ensureDefaultModel();
  const base: EngineOptions = {
    maxBatchSize: 32,
    maxPrefillTokens: 2048,
    kvCacheBytes: 128 << 20,
    maxSeqLen: 1024,
    threads,
    // Every round computes its prompts afresh on both sides (rounds repeat the same prompts).
    prefixCache: false,
  };
  const sides: Side[] = control ? ['A', 'C', 'B'] : ['A', 'B'];
  const engines: Record<Side, EngineCore[]> = { A: [], C: [], B: [] };
  if (sameEngine) {
    for (let i = 0; i < instances; i++) engines.B.push(await loadEngine(modelPath, specOptions(base)));
    engines.A = engines.C = engines.B;
  } else {
    for (let i = 0; i < instances; i++)
      for (const side of i % 2 === 0 ? sides : [...sides].reverse())
        engines[side].push(
          await loadEngine(modelPath, side === 'B' && method !== 'none' ? specOptions(base) : base),
        );
  }
  const plain = engines.A[0];
  /** The speculative engines' counters, summed: each round's B is one of them. */
  const specStats = async (): Promise<SpecDecodeStats> =>
    sumStats(await Promise.all(engines.B.map(async (e) => (await e.status()).specDecode ?? NO_SPEC)));
  const label =
    method + (args['draft-layers'] ? ` L=${args['draft-layers']}` : '') + (args['fixed-k'] ? ' fixed k' : '');
  console.log(
    `# bench:spec — ${modelPath.split('/').pop()}, ${label}, ${threads} threads, ${maxTokens} tokens, k ≤ ${K}, ${rounds} rounds${control ? ", A/A control (A')" : ''}${instances > 1 ? `, ${instances} engines${sameEngine ? '' : ' per side'}` : ''}${sameEngine ? ", A and A' are requests without speculation on B's engines" : ''}`,
  );
  console.log(`load average at start: ${loadavg()}\n`);
  const ctlHead = control ? " no spec A' tok/s | A'/A |" : '';
  const vsCtl = control ? " ratio vs A' |" : '';
  const ctlDecode = control ? " decode A'/A |" : '';
  console.log(
    `| task | conc. | no spec tok/s |${ctlHead} ${label} tok/s | ratio |${vsCtl} decode ratio |${ctlDecode} accepted | mean accepted / step | same output | per round: ratio${control ? " · A'/A" : ''} (median [95% interval]) | load after |`,
  );
  console.log(
    `|---|---:|---:|${control ? '---:|---:|' : ''}---:|---:|${control ? '---:|' : ''}---:|${control ? '---:|' : ''}---:|---:|---|---|---|`,
  );
  const ids = new Map<Task, number[][]>();
  for (const t of TASKS) ids.set(t, await Promise.all(t.prompts.map((p) => plain.tokenize(p, false))));
  let groundedDrafts = 0;
  /** Accepted draft tokens per draft position, grounded tasks at one sequence. */
  const groundedPerPos: number[] = [];
  const orders = permutations(sides);
  for (const task of TASKS) {
    for (const c of concurrencies) {
      const prompts = Array.from({ length: c }, (_, i) => ids.get(task)![i % task.prompts.length]);
      const tokS: Record<Side, number[]> = { A: [], C: [], B: [] };
      const decode: Record<Side, number[]> = { A: [], C: [], B: [] };
      let same = true;
      const before = await specStats();
      for (let r = 0; r < rounds; r++) {
        const got: Partial<Record<Side, Run>> = {};
        const instance = r % instances;
        const order = orders[Math.floor(r / instances) % orders.length];
        for (const side of order)
          got[side] = await runBatch(
            engines[side][instance],
            prompts,
            task.constraint,
            sameEngine && side !== 'B',
          );
        for (const side of sides) {
          tokS[side].push(got[side]!.tokS);
          if (args['per-round'])
            console.error(
              `${task.name}, ${c}: round ${r}, instance ${instance}, order ${order.join(' ')}: ${side} ${fmt(got[side]!.tokS)} tok/s`,
            );
          decode[side].push(got[side]!.decodeTokS);
        }
        same &&= got.A!.outputs.every((o, i) => o.join() === got.B!.outputs[i].join());
      }
      const d = specDelta(before, await specStats());
      if (task.grounded && c === 1) {
        groundedDrafts += d.drafts;
        d.perPos.forEach((n, j) => (groundedPerPos[j] = (groundedPerPos[j] ?? 0) + n));
      }
      const [ma, mc, mb] = [median(tokS.A), control ? median(tokS.C) : 0, median(tokS.B)];
      const [dA, dC, dB] = [median(decode.A), control ? median(decode.C) : 0, median(decode.B)];
      const ctl = control ? ` ${fmt(mc)} | ${fmt(mc / ma, 2)}× |` : '';
      const ctlD = control ? ` ${fmt(dC / dA, 2)}× |` : '';
      // Each round's sides ran back to back on the same prompts: their ratios pair the noise.
      const perRound = spread(tokS.B.map((b, i) => b / tokS.A[i]));
      const perRoundCtl = control ? ` · ${spread(tokS.C.map((c2, i) => c2 / tokS.A[i]))}` : '';
      console.log(
        `| ${task.name} | ${c} | ${fmt(ma)} |${ctl} ${fmt(mb)} | ${fmt(mb / ma, 2)}× |${control ? ` ${fmt(mb / mc, 2)}× |` : ''} ${fmt(dB / dA, 2)}× |${ctlD} ${fmt((100 * d.accepted) / Math.max(1, d.proposed))} % of ${d.proposed} | ${fmt(d.accepted / Math.max(1, d.drafts), 2)} | ${same ? 'yes' : 'NO'} | ${perRound}${perRoundCtl} | ${loadavg().split(' ').slice(0, 3).join(' ')} |`,
      );
    }
  }
  console.log(`\nload average after Prism: ${loadavg()}`);
  for (const e of new Set(Object.values(engines).flat())) await e.close();
  // Tokens gained per verify step on the grounded tasks, single stream: what the projection uses.
  // Tokens a verify step of at most k draft tokens yields: 1 + the share of verify steps
  // that accepted a token at each position below k (a draft shorter than k counts as
  // refused past its end, so this errs low).
  const perStep = (k: number) =>
    1 + groundedPerPos.slice(0, k).reduce((a, n) => a + n, 0) / Math.max(1, groundedDrafts);

  if (!args['no-peer']) await peer(modelPath, ids);
  if (args.size) await sizeProjection(args.size, perStep);
}

/** llama.cpp: one sequence without and with its input-lookup predictor, the same prompt ids. */
async function peer(modelPath: string, ids: Map<Task, number[][]>): Promise<void> {
  const { llama, model } = await loadPrebuiltLlamaModel(modelPath, threads);
  const ctx = await model.createContext({
    contextSize: 1024,
    sequences: 2,
    threads: { ideal: threads, min: threads },
  });
  const plainSeq = ctx.getSequence();
  const lookupSeq = ctx.getSequence({
    tokenPredictor: new InputLookupTokenPredictor({ predictionLength: { max: K } }),
  });
  const eog = new Set([model.tokens.eos, model.tokens.eot].filter((t): t is Token => t !== null));
  const gen = async (seq: typeof plainSeq, prompt: readonly number[]) => {
    await seq.clearHistory();
    // The predictor looks up in the input it was given: LlamaChat and LlamaCompletion hand it
    // over, a bare sequence.evaluate does not (without this it predicted nothing at all).
    seq.tokenPredictor?.updateInputTokens?.(prompt as Token[]);
    const t0 = nowMs();
    let n = 0;
    for await (const t of seq.evaluate(prompt as Token[], { temperature: 0 })) {
      if (eog.has(t)) break;
      if (++n >= maxTokens) break;
    }
    return (n / (nowMs() - t0)) * 1000;
  };
  console.log(`\n## llama.cpp (node-llama-cpp InputLookupTokenPredictor, prediction ≤ ${K}), concurrency 1`);
  console.log(`load average: ${loadavg()}\n`);
  console.log('| task | no lookup tok/s | lookup tok/s | ratio | validated / predicted |');
  console.log('|---|---:|---:|---:|---:|');
  for (const task of TASKS) {
    if (task.constraint) continue; // node-llama-cpp's predictor is not run under a grammar here
    const a: number[] = [];
    const b: number[] = [];
    const s0 = { ...lookupSeq.tokenPredictions };
    for (let r = 0; r < rounds; r++)
      for (const p of ids.get(task)!) {
        if (r % 2 === 0) {
          a.push(await gen(plainSeq, p));
          b.push(await gen(lookupSeq, p));
        } else {
          b.push(await gen(lookupSeq, p));
          a.push(await gen(plainSeq, p));
        }
      }
    const s1 = lookupSeq.tokenPredictions;
    const validated = s1.validated - s0.validated;
    const refuted = s1.refuted - s0.refuted;
    console.log(
      `| ${task.name} | ${fmt(median(a))} | ${fmt(median(b))} | ${fmt(median(b) / median(a), 2)}× | ${fmt((100 * validated) / Math.max(1, validated + refuted))} % of ${validated + refuted} |`,
    );
  }
  await ctx.dispose();
  await model.dispose();
  await llama.dispose();
}

/**
 * The native step of one sequence at a size model's shape: 1 token against 1 + k (k draft
 * tokens verified) for every k up to the cap, at a context of 256 positions. The projected
 * speed-up is what the adaptive k would pick there: the best, over k, of the tokens a verify
 * step of at most k drafts yielded on the default model (`perStep`) over that step's cost
 * relative to a 1-token step.
 */
async function sizeProjection(name: string, perStep: (k: number) => number): Promise<void> {
  const path = join('models', 'sizes', `${name}.gguf`);
  if (!existsSync(path)) {
    console.log(`\n(size model ${path} not found: run scripts/make-size-models.py; projection skipped)`);
    return;
  }
  const model = await loadModel(path);
  const info = modelInfo(model);
  const pages = info.kvLayout?.pagesPerBlock ?? 1;
  const bs = 16;
  const ctxLen = 256;
  const nBlocks = Math.ceil((ctxLen + K + 1) / bs);
  const ctx = createContext(model, {
    kvBlocks: nBlocks * pages,
    blockSize: bs,
    maxBatchTokens: 64,
    maxSeqs: 1,
    threads,
  });
  const table = Array.from({ length: nBlocks * pages }, (_, i) => i);
  const plan = (n: number): StepPlan => ({
    tokens: Int32Array.from({ length: n }, (_, i) => 100 + i),
    positions: Int32Array.from({ length: n }, (_, i) => ctxLen + i),
    seqTokenOffsets: Int32Array.from([0, n]),
    blockTableOffsets: Int32Array.from([0, table.length]),
    blockTables: Int32Array.from(table),
    sample: Uint8Array.from([1]),
    temperature: Float32Array.from([0]),
    topK: Int32Array.from([0]),
    topP: Float32Array.from([1]),
    repetitionPenalty: Float32Array.from([1]),
    presencePenalty: Float32Array.from([0]),
    frequencyPenalty: Float32Array.from([0]),
    penaltyTokenOffsets: Int32Array.from([0, 0]),
    penaltyTokens: new Int32Array(0),
    seeds: BigUint64Array.from([0n]),
    sampleCounters: Int32Array.from([0]),
    allowedMaskRows: Int32Array.from([-1]),
    allowedMask: new Int32Array(0),
    topLogprobs: Int32Array.from([0]),
    ...(n > 1 ? { draftCounts: Int32Array.from([n - 1]) } : {}),
  });
  const time = async (n: number) => {
    const t0 = nowMs();
    await step(ctx, plan(n));
    return nowMs() - t0;
  };
  const ks = Array.from({ length: K + 1 }, (_, k) => k);
  for (const k of ks) await time(1 + k);
  const ms = ks.map(() => [] as number[]);
  // Rounds alternate the order of k, so that a drift in the machine's speed falls on all.
  for (let r = 0; r < 3; r++) for (const k of r % 2 ? [...ks].reverse() : ks) ms[k].push(await time(1 + k));
  const one = median(ms[0]);
  console.log(`\n## Verify-step cost at ${name} (${info.numLayers} layers), one sequence, context ${ctxLen}`);
  console.log(`load average: ${loadavg()}\n`);
  console.log(
    '| step | median ms | cost vs 1 token | tokens per step (default model, grounded) | speed-up |',
  );
  console.log('|---|---:|---:|---:|---:|');
  let best = { k: 0, speedUp: 1 };
  for (const k of ks) {
    const cost = median(ms[k]) / one;
    const speedUp = perStep(k) / cost;
    if (speedUp > best.speedUp) best = { k, speedUp };
    console.log(
      `| 1 + ${k} tokens | ${fmt(median(ms[k]))} | ${fmt(cost, 2)} | ${fmt(perStep(k), 2)} | ${fmt(speedUp, 2)}× |`,
    );
  }
  console.log(
    `\nProjected single-stream speed-up at ${name} with the default model's measured grounded acceptance: ` +
      `${fmt(best.speedUp, 2)}× at k = ${best.k} (the k the cost curve would pick; every verify step charged at ` +
      `the full 1 + k cost; proposer and scheduling time not counted).`,
  );
  disposeContext(ctx);
  disposeModel(model);
}

await main();
