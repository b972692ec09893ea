/**
 * Engine benchmark: Prism's native core vs llama.cpp (node-llama-cpp's prebuilt CPU binary)
 * on the same GGUF, the same token ids and the same thread count, in one run.
 *
 *   npm run bench:engine [-- --model PATH --json --runs N --update-docs ...]   (--help lists all)
 *
 * Measures (tok/s, medians of --runs runs after --warmup warm-up runs, the two engines
 * interleaved run by run so that drift on a shared machine hits both alike):
 *   single-stream decode, aggregate decode of --sequences concurrent sequences, and prefill
 *   of one --prefill-tokens prompt; the Prism/llama.cpp ratio of each; the decode roofline
 *   (measured memory bandwidth ÷ weight bytes per token); and the greedy continuations of
 *   three chat prompts side by side.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Template } from '@huggingface/jinja';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import { commonPrefixLength, median, pairedRooflinePercent, ratio } from './stats.js';
import { describeCommit, describeMachine } from './engine/environment.js';
import { LlamaBenchEngine } from './engine/llama-bench.js';
import { llamaCppBin } from './engine/llama-cpp-build.js';
import { LlamaCppEngine } from './engine/llamacpp.js';
import { loadNative, PrismEngine } from './engine/prism.js';
import { CHAT_QUESTIONS, PASSAGE, tokenWindow } from './engine/prompts.js';
import {
  againstBestPeer,
  renderMarkdown,
  renderText,
  replaceDocSection,
  type Continuation,
  type EngineBenchReport,
  type EngineName,
  type MeasureResult,
  type Roofline,
} from './engine/report.js';
import type { BenchEngine } from './engine/types.js';
import {
  DEFAULT_SIZES,
  DEFAULT_TYPES,
  SIZE_NAMES,
  TYPE_NAMES,
  ensureSizeModels,
  formatPrismMemory,
  parseList,
  renderSizeSuite,
  replaceSizesSection,
  type SizeRow,
} from './engine/sizes.js';

const HELP = `Usage: npm run bench:engine [-- options]

Runs Prism's native core and llama.cpp (node-llama-cpp, prebuilt CPU binary) side by side.

  --model PATH          GGUF file (default: the default model, fetched when absent)
  --engine WHICH        both | prism | llama.cpp (default both; the other side's column stays empty)
  --llama-cpp-source M  auto | build | off: llama.cpp built from source (scripts/build-llama-cpp.mjs)
                        as a second peer beside node-llama-cpp's prebuilt, through its llama-bench
                        and llama-batched-bench: auto (default) when a build is there
                        (PRISM_LLAMA_CPP_BIN or .llama-cpp/), build: build it first if missing
                        (~25 min on 2 cores), off: the prebuilt only
  --threads N           threads for both engines (default 2)
  --runs N              measured runs per measure and engine, median reported (default 3)
  --warmup N            warm-up runs per measure and engine, not reported (default 1)
  --sequences N         concurrent sequences of the aggregate measure (default 32)
  --prompt-tokens N     prompt length of the decode measures (default 32)
  --new-tokens N        tokens generated per sequence in the decode measures (default 128)
  --prefill-tokens N    length of the prefill prompt (default 512)
  --measures LIST       comma-separated subset of single,aggregate,prefill (default all three)
  --block-size N        Prism KV block size in tokens (default 128, the engine's cacheBlockSize)
  --suite sizes         run the size suite instead of one model: random-weight GGUFs with the
                        layer shapes of Llama-3.2-1B/3B, Llama-3.1-8B, Qwen2.5-1.5B and two MoE
                        models (scripts/make-size-models.py writes them into models/sizes/ once),
                        one row per size × type; decode and
                        aggregate default to 32 new tokens and 16 sequences there
  --sizes LIST          size suite: subset of ${SIZE_NAMES.join(',')} (default ${DEFAULT_SIZES.join(',')})
  --types LIST          size suite: subset of ${TYPE_NAMES.join(',')} (default ${DEFAULT_TYPES.join(',')})
  --json                print the result record as JSON instead of the table
  --markdown            print the docs/benchmarks.md section body instead of the table
  --update-docs         also rewrite the generated part of the Engine section of docs/benchmarks.md
                        (with --suite sizes: the size-suite section)
  --help                this text
`;

const MEASURE_NAMES = ['single', 'aggregate', 'prefill'] as const;
type MeasureName = (typeof MEASURE_NAMES)[number];

function parseMeasures(value: string | undefined): Set<MeasureName> {
  if (value === undefined) return new Set(MEASURE_NAMES);
  const names = value.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!(MEASURE_NAMES as readonly string[]).includes(name)) {
      throw new RangeError(
        `--measures takes a comma-separated subset of ${MEASURE_NAMES.join(',')}; got '${name}'`,
      );
    }
  }
  return new Set(names as MeasureName[]);
}

interface Args {
  modelPath?: string;
  engines: EngineName[];
  llamaCppSource: 'auto' | 'build' | 'off';
  threads: number;
  runs: number;
  warmup: number;
  sequences: number;
  promptTokens: number;
  newTokens: number;
  prefillTokens: number;
  blockSize: number;
  measures: Set<MeasureName>;
  output: 'table' | 'json' | 'markdown';
  updateDocs: boolean;
  suite?: { sizes: string[]; types: string[] };
}

function positiveInt(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new RangeError(`--${name} must be an integer ≥ ${min}, got '${value}'`);
  return n;
}

export function parseBenchArgs(argv: string[]): Args | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      model: { type: 'string' },
      engine: { type: 'string' },
      'llama-cpp-source': { type: 'string' },
      threads: { type: 'string' },
      runs: { type: 'string' },
      warmup: { type: 'string' },
      sequences: { type: 'string' },
      'prompt-tokens': { type: 'string' },
      'new-tokens': { type: 'string' },
      'prefill-tokens': { type: 'string' },
      'block-size': { type: 'string' },
      measures: { type: 'string' },
      json: { type: 'boolean' },
      markdown: { type: 'boolean' },
      'update-docs': { type: 'boolean' },
      suite: { type: 'string' },
      sizes: { type: 'string' },
      types: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) return 'help';
  const engine = values.engine ?? 'both';
  if (engine !== 'both' && engine !== 'llama.cpp' && engine !== 'prism') {
    throw new RangeError(`--engine must be one of both, llama.cpp, prism; got '${engine}'`);
  }
  const llamaCppSource = values['llama-cpp-source'] ?? 'auto';
  if (llamaCppSource !== 'auto' && llamaCppSource !== 'build' && llamaCppSource !== 'off')
    throw new RangeError(`--llama-cpp-source must be one of auto, build, off; got '${llamaCppSource}'`);
  if (values.json && values.markdown)
    throw new RangeError('--json and --markdown are exclusive: pick one output');
  if (values.suite !== undefined && values.suite !== 'sizes')
    throw new RangeError(`--suite must be 'sizes'; got '${values.suite}'`);
  if (values.suite === undefined && (values.sizes !== undefined || values.types !== undefined))
    throw new RangeError('--sizes and --types belong to --suite sizes');
  if (values.suite !== undefined && values.model !== undefined)
    throw new RangeError('--model and --suite are exclusive: the suite picks its own files');
  const suite = values.suite
    ? {
        sizes: parseList('sizes', values.sizes, SIZE_NAMES, DEFAULT_SIZES),
        types: parseList('types', values.types, TYPE_NAMES, DEFAULT_TYPES),
      }
    : undefined;
  return {
    suite,
    modelPath: values.model,
    engines: engine === 'both' ? ['llama.cpp', 'prism'] : [engine],
    llamaCppSource,
    threads: positiveInt('threads', values.threads, 2),
    runs: positiveInt('runs', values.runs, 3),
    warmup: positiveInt('warmup', values.warmup, 1, 0),
    sequences: positiveInt('sequences', values.sequences, suite ? 16 : 32),
    promptTokens: positiveInt('prompt-tokens', values['prompt-tokens'], 32),
    newTokens: positiveInt('new-tokens', values['new-tokens'], suite ? 32 : 128, 2),
    prefillTokens: positiveInt('prefill-tokens', values['prefill-tokens'], 512),
    blockSize: positiveInt('block-size', values['block-size'], 128),
    measures: parseMeasures(values.measures),
    output: values.json ? 'json' : values.markdown ? 'markdown' : 'table',
    updateDocs: values['update-docs'] ?? false,
  };
}

const log = (line: string) => process.stderr.write(line + '\n');

/**
 * Runs `measure` on every engine: warm-ups first, then `runs` rounds, alternating which
 * engine goes first each round. Returns tok/s per engine. With `read` (single-stream decode),
 * the machine's sustained read rate is taken before each measured round and after each
 * engine's run, and each run is paired with the mean of the reads just before and after it:
 * the same seconds, since this machine's bandwidth moves with its neighbours.
 */
async function interleaved(
  label: string,
  engines: BenchEngine[],
  runs: number,
  warmup: number,
  measure: (engine: BenchEngine) => Promise<number>,
  read?: () => number,
): Promise<MeasureResult & { readLog?: number[] }> {
  const results: Partial<Record<EngineName, number[]>> = {};
  const reads: Partial<Record<EngineName, number[]>> = {};
  const readLog: number[] = [];
  const takeRead = () => {
    const gbs = read!();
    readLog.push(gbs);
    return gbs;
  };
  for (let round = -warmup; round < runs; round++) {
    const order = round % 2 === 0 ? engines : [...engines].reverse();
    let before = round >= 0 && read ? takeRead() : NaN;
    for (const engine of order) {
      const tokPerSec = await measure(engine);
      const tag = round < 0 ? 'warm-up' : `run ${round + 1}/${runs}`;
      let readNote = '';
      if (round >= 0 && read) {
        const after = takeRead();
        (reads[engine.name as EngineName] ??= []).push((before + after) / 2);
        readNote = ` (sustained read ${before.toFixed(1)} → ${after.toFixed(1)} GB/s)`;
        before = after;
      }
      log(`  ${label} · ${engine.name} · ${tag}: ${tokPerSec.toFixed(1)} tok/s${readNote}`);
      if (round >= 0) (results[engine.name as EngineName] ??= []).push(tokPerSec);
      // Let the other engine's worker threads go idle before it is the other one's turn.
      await sleep(200);
    }
  }
  const medians: Partial<Record<EngineName, number>> = {};
  for (const [name, values] of Object.entries(results)) medians[name as EngineName] = median(values);
  return {
    label,
    runs: results,
    median: medians,
    ratio: ratio(medians.prism, medians['llama.cpp']),
    best: againstBestPeer(medians),
    ...(read ? { readGBs: reads, readLog } : {}),
  };
}

function expectTokens(
  engine: string,
  what: string,
  generated: readonly (readonly number[])[],
  count: number,
): void {
  generated.forEach((seq, i) => {
    if (seq.length !== count)
      throw new Error(`${engine} ${what}: sequence ${i} produced ${seq.length} tokens, expected ${count}`);
  });
}

async function main(argv: string[]): Promise<void> {
  const parsed = parseBenchArgs(argv);
  if (parsed === 'help') {
    process.stdout.write(HELP);
    return;
  }
  const args = parsed;
  const root = projectRoot();
  const command = ['npm run bench:engine', ...(argv.length ? ['--', ...argv] : [])].join(' ');
  const sourceBin =
    args.llamaCppSource === 'off' || !args.engines.includes('llama.cpp')
      ? undefined
      : llamaCppBin(root, args.llamaCppSource === 'build');
  log(
    sourceBin
      ? `llama.cpp from source: ${sourceBin}`
      : 'llama.cpp from source: not run (no build; `npm run build:llama-cpp` or --llama-cpp-source build)',
  );
  if (args.suite) return sizeSuite(args, args.suite, root, command, sourceBin);
  const modelPath = args.modelPath ?? ensureDefaultModel(log);
  const report = await benchModel(args, root, modelPath, command, true, sourceBin);
  if (args.output === 'json') process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  else if (args.output === 'markdown') process.stdout.write(renderMarkdown(report) + '\n');
  else process.stdout.write(renderText(report) + '\n');

  if (args.updateDocs) {
    const docPath = join(root, 'docs', 'benchmarks.md');
    writeFileSync(docPath, replaceDocSection(readFileSync(docPath, 'utf8'), renderMarkdown(report)));
    log(`updated ${relative(process.cwd(), docPath)}`);
  }
}

/** Every size × type of the suite, one after the other (each loads and frees both engines). */
async function sizeSuite(
  args: Args,
  suite: { sizes: string[]; types: string[] },
  root: string,
  command: string,
  sourceBin: string | undefined,
): Promise<void> {
  const models = ensureSizeModels(root, suite.sizes, suite.types, log);
  const loadAtStart = loadavg()[0];
  const rows: SizeRow[] = [];
  for (const model of models) {
    log(`== ${model.shape} ${model.type.toUpperCase()} (${relative(root, model.path)})`);
    rows.push({
      model,
      report: await benchModel(args, root, model.path, command, false, sourceBin, model.bytesPerToken),
    });
  }
  const body = renderSizeSuite(rows, {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit: describeCommit(root),
    machine: describeMachine(),
    command,
    load: `${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end`,
  });
  if (args.output === 'json') process.stdout.write(JSON.stringify({ rows }, null, 2) + '\n');
  else process.stdout.write(body + '\n');
  if (args.updateDocs) {
    const docPath = join(root, 'docs', 'benchmarks.md');
    writeFileSync(docPath, replaceSizesSection(readFileSync(docPath, 'utf8'), body));
    log(`updated ${relative(process.cwd(), docPath)}`);
  }
}

/**
 * The three measures (and, for a single model, the greedy continuations) on one file.
 * `fileBytesPerToken`: the weight bytes llama.cpp reads per decoded token (the file's own
 * encoding), when known; else Prism's count stands for both.
 */
async function benchModel(
  args: Args,
  root: string,
  modelPath: string,
  command: string,
  withContinuations: boolean,
  sourceBin: string | undefined,
  fileBytesPerToken?: number,
): Promise<EngineBenchReport> {
  const chatTokensBudget = 256; // chat prompt (system line + question) + 32 new tokens
  const maxContext = Math.max(args.prefillTokens + 1, args.promptTokens + args.newTokens, chatTokensBudget);
  const aggregateContext = args.promptTokens + args.newTokens;

  // llama.cpp is loaded even when only Prism is measured: its tokenizer makes the ids.
  log(`loading ${relative(process.cwd(), modelPath) || modelPath} into llama.cpp ...`);
  const llama = await LlamaCppEngine.load({
    modelPath,
    threads: args.threads,
    maxSeqs: args.sequences,
    maxContext,
    aggregateContext,
    aggregateBatch: args.sequences * args.promptTokens,
  });

  let prism: PrismEngine | undefined;
  let native: Awaited<ReturnType<typeof loadNative>> | undefined;
  let prismMemory: EngineBenchReport['prismMemory'];
  if (args.engines.includes('prism')) {
    try {
      native = await loadNative();
    } catch (e) {
      throw new Error(
        `${(e as Error).message}. Build it first, or run only the llama.cpp half with --engine llama.cpp.`,
      );
    }
    log('loading the same file into Prism ...');
    const rssBefore = process.memoryUsage().rss;
    prism = await PrismEngine.load(native, {
      modelPath,
      threads: args.threads,
      maxSeqs: args.sequences,
      blockSize: args.blockSize,
      maxContext,
      aggregateContext,
      maxBatchTokens: Math.max(args.prefillTokens, args.sequences * args.promptTokens),
    });
    prismMemory = {
      weightBytes: prism.info.weightBytes,
      kvBytes: prism.ctxInfo.kvBytes,
      rssGrowthBytes: process.memoryUsage().rss - rssBefore,
    };
    log(formatPrismMemory(prismMemory));
  }
  const engines: BenchEngine[] = [];
  if (args.engines.includes('llama.cpp')) engines.push(llama);
  if (sourceBin) engines.push(new LlamaBenchEngine({ bin: sourceBin, modelPath, threads: args.threads }));
  if (prism) engines.push(prism);

  try {
    const tokenize = (text: string) => llama.tokenize(text, false);
    const singlePrompt = tokenWindow(tokenize, PASSAGE, 0, args.promptTokens);
    // Distinct prompts (windows 16 tokens apart), so no two sequences do identical work.
    const aggregatePrompts = Array.from({ length: args.sequences }, (_, i) =>
      tokenWindow(tokenize, PASSAGE, 7 + i * 16, args.promptTokens),
    );
    const prefillPrompt = tokenWindow(tokenize, PASSAGE, 3, args.prefillTokens);

    const loadAtStart = loadavg()[0];
    const wants = (m: MeasureName) => args.measures.has(m);
    if (wants('single'))
      log(`single-stream decode: ${args.newTokens} new tokens after ${args.promptTokens} prompt tokens`);
    // Each single-stream run is set against the machine's sustained read rate in the same
    // seconds (reads just before and after it, with the decode's thread count), not against
    // one probe for the file: this machine's memory bandwidth moves with its neighbours (a
    // plain two-core read loop: 45-48 GB/s in some minutes, 75-80 in others), and a probe
    // taken minutes away from the decode runs put rows at 117% of "their" roofline. What
    // the table then shows is the host's state in those seconds beside each engine's rate.
    const core = prism ? native : undefined;
    const read = core ? () => core.sustainedReadRate(2 ** 30, 3, args.threads) : undefined;
    const singleDecode = !wants('single')
      ? undefined
      : await interleaved(
          'single-stream decode',
          engines,
          args.runs,
          args.warmup,
          async (engine) => {
            const t = await engine.decodeSingle(singlePrompt, args.newTokens);
            expectTokens(engine.name, 'single-stream decode', t.generated, args.newTokens);
            return (t.decodedTokens / t.decodeMs) * 1000;
          },
          read,
        );
    core?.releaseReadBuffer();

    if (wants('aggregate'))
      log(`aggregate decode: ${args.sequences} sequences × ${args.newTokens} new tokens`);
    const aggregateDecode = !wants('aggregate')
      ? undefined
      : await interleaved(
          `aggregate decode, ${args.sequences} sequences`,
          engines,
          args.runs,
          args.warmup,
          async (engine) => {
            const t = await engine.decodeAggregate(aggregatePrompts, args.newTokens);
            expectTokens(engine.name, 'aggregate decode', t.generated, args.newTokens);
            return (t.decodedTokens / t.decodeMs) * 1000;
          },
        );

    if (wants('prefill')) log(`prefill: one ${args.prefillTokens}-token prompt`);
    const prefill = !wants('prefill')
      ? undefined
      : await interleaved(
          `prefill, ${args.prefillTokens}-token prompt`,
          engines,
          args.runs,
          args.warmup,
          async (engine) => {
            const t = await engine.prefill(prefillPrompt);
            if (t.firstToken < 0) throw new Error(`${engine.name} prefill sampled no token`);
            return (t.promptTokens / t.prefillMs) * 1000;
          },
        );

    let roofline: Roofline | undefined;
    if (native && prism && read) {
      const reads = singleDecode?.readLog?.length ? singleDecode.readLog : [read()];
      native.releaseReadBuffer();
      const bandwidthGBs = median(reads);
      const weightBytes = prism.info.weightBytes;
      const bytesPerToken: Partial<Record<EngineName, number>> = {
        prism: weightBytes,
        'llama.cpp': fileBytesPerToken ?? weightBytes,
        'llama.cpp source': fileBytesPerToken ?? weightBytes,
      };
      // Run by run against the sustained read of its own seconds (pairedRooflinePercent).
      const percent: Partial<Record<EngineName, number>> = {};
      const minPercent: Partial<Record<EngineName, number>> = {};
      const decodeGBs: Partial<Record<EngineName, number>> = {};
      for (const [key, values] of Object.entries(singleDecode?.runs ?? {})) {
        const name = key as EngineName;
        const runReads = singleDecode?.readGBs?.[name] ?? [];
        const bytes = bytesPerToken[name] ?? weightBytes;
        percent[name] = pairedRooflinePercent(values, runReads, bytes);
        minPercent[name] = Math.min(...values.map((v, i) => ((v * bytes) / (runReads[i] * 1e9)) * 100));
        decodeGBs[name] = (median(values) * bytes) / 1e9;
      }
      roofline = {
        bandwidthGBs,
        bandwidthRuns: reads,
        weightBytes,
        tokPerSec: (bandwidthGBs * 1e9) / weightBytes,
        percent,
        minPercent,
        decodeGBs,
        bytesPerToken,
      };
    }

    let continuations: Continuation[] = [];
    if (withContinuations) {
      log('greedy continuations ...');
      // llama-bench generates no text: the continuations are the two engines that do.
      continuations = await greedyContinuations(
        llama,
        engines.filter((e) => e.name !== 'llama.cpp source'),
      );
    }

    const skipped: Partial<Record<EngineName, string>> = {};
    for (const name of ['llama.cpp', 'prism'] as const)
      if (!args.engines.includes(name)) skipped[name] = `not asked for (--engine ${args.engines[0]})`;
    if (!sourceBin)
      skipped['llama.cpp source'] =
        args.llamaCppSource === 'off' || !args.engines.includes('llama.cpp')
          ? 'not asked for'
          : 'no build (`npm run build:llama-cpp`, or PRISM_LLAMA_CPP_BIN)';

    const report: EngineBenchReport = {
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      commit: describeCommit(root),
      machine: describeMachine(),
      loadAverage: { start: loadAtStart, end: loadavg()[0] },
      command,
      model: {
        path: relative(root, modelPath).startsWith('..') ? modelPath : relative(root, modelPath),
        name: prism?.info.name,
        weightBytes: prism?.info.weightBytes,
      },
      settings: {
        threads: args.threads,
        runs: args.runs,
        warmupRuns: args.warmup,
        promptTokens: args.promptTokens,
        newTokens: args.newTokens,
        sequences: args.sequences,
        prefillTokens: args.prefillTokens,
        tokenizer:
          "llama.cpp's tokenizer (node-llama-cpp, from the GGUF's vocabulary) makes the ids; both engines get the same ids",
      },
      engines: Object.fromEntries(engines.map((e) => [e.name, e.describe()])),
      skipped,
      measures: { singleDecode, aggregateDecode, prefill },
      roofline,
      ...(prismMemory ? { prismMemory } : {}),
      continuations,
    };
    return report;
  } finally {
    for (const engine of [prism, llama]) await engine?.dispose();
  }
}

/** The chat questions rendered with the model's own template, continued greedily by every engine. */
async function greedyContinuations(llama: LlamaCppEngine, engines: BenchEngine[]): Promise<Continuation[]> {
  const source = llama.chatTemplate();
  if (!source) throw new Error('the model file has no tokenizer.chat_template; the continuations need one');
  const template = new Template(source);
  const stop = llama.stopTokens();
  const out: Continuation[] = [];
  for (const question of CHAT_QUESTIONS) {
    const text = template.render({
      messages: [{ role: 'user', content: question }],
      add_generation_prompt: true,
      bos_token: '',
      eos_token: '',
    });
    const prompt = llama.tokenize(text, true);
    const ids: Partial<Record<EngineName, number[]>> = {};
    const texts: Partial<Record<EngineName, string>> = {};
    for (const engine of engines) {
      const generated = await engine.greedy(prompt, 32, stop);
      ids[engine.name as EngineName] = generated;
      texts[engine.name as EngineName] = llama.detokenize(generated);
    }
    const a = ids['llama.cpp'];
    const b = ids.prism;
    out.push({
      question,
      promptTokens: prompt.length,
      ids,
      text: texts,
      ...(a && b
        ? {
            identical: a.length === b.length && commonPrefixLength(a, b) === a.length,
            commonPrefix: commonPrefixLength(a, b),
          }
        : {}),
    });
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`bench:engine: ${(e as Error).message}\n`);
    process.exitCode = 1;
  });
}
