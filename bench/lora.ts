/**
 * Multi-LoRA benchmark: output tok/s of the in-process engine at concurrency 16 with the base
 * model only and with 1, 4 and 8 distinct adapters (rank 8 and rank 64, all seven linear
 * layers) mixed evenly across the requests, and the adapter load time. Adapters are written
 * as real PEFT directories (adapter_config.json + F16 adapter_model.safetensors, random
 * weights) into a temporary folder and loaded through the engine's own loader.
 *
 *   npm run bench:lora [-- --rounds N --new-tokens N --threads N]
 *   npm run bench:lora -- --ranks 64 --counts 8 --no-peer     (a short A/B run)
 *
 * Scenarios are run round-robin (--rounds times, median reported), so machine drift hits all
 * alike. Then the peer (bench/lora-peer.ts): llama.cpp on the same GGUF with one adapter for
 * every request (the scenario it can run), interleaved round by round with Prism's, after a
 * check that the converted trained French adapter gives llama.cpp Prism's greedy tokens.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineCore } from '../engine/engine-core.js';
import { modelInfo, loadModel, disposeModel } from '../native/native.js';
import { targetShape, type BaseShape } from '../engine/adapters/peft-reader.js';
import { HF_MODULE, LORA_TARGETS } from '../engine/adapters/names.js';
import { baseShapeOf } from '../engine/adapters/native-adapter.js';
import { median } from './stats.js';
import { convertToGgufLora, LlamaLoraPeer, useProjectPython } from './lora-peer.js';
import { ensureTrainedAdapters } from '../test/trained-adapters.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    'new-tokens': { type: 'string', default: '48' },
    threads: { type: 'string' },
    concurrency: { type: 'string', default: '16' },
    // A shorter run: only these adapter counts and ranks (base only is always run), no peer.
    counts: { type: 'string', default: '1,4,8' },
    ranks: { type: 'string', default: '8,64' },
    'no-peer': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const NEW = Number(args['new-tokens']);
const CONC = Number(args.concurrency);
const COUNTS = args.counts.split(',').map(Number);
const RANKS = args.ranks.split(',').map(Number);

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
function f16(x: number): number {
  // Small random values: round through Float32 → half with the sign, exponent and mantissa.
  F32[0] = x;
  const u = U32[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exp = ((u >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  return sign | (exp << 10) | ((u >>> 13) & 0x3ff);
}

/** Writes a random PEFT LoRA adapter of rank r on every linear layer. */
function writeAdapter(dir: string, base: BaseShape, r: number, seed: number): void {
  mkdirSync(dir, { mode: 0o755 });
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 0.02;
  const header: Record<string, unknown> = {};
  const parts: Buffer[] = [];
  let off = 0;
  const add = (name: string, shape: number[]) => {
    const n = shape[0]! * shape[1]!;
    const b = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) b.writeUInt16LE(f16(rand()), i * 2);
    header[name] = { dtype: 'F16', shape, data_offsets: [off, off + b.length] };
    parts.push(b);
    off += b.length;
  };
  for (let l = 0; l < base.numLayers; l++) {
    for (const t of LORA_TARGETS) {
      const { inFeatures, outFeatures } = targetShape(base, t);
      const k = `base_model.model.model.layers.${l}.${HF_MODULE[t]}`;
      add(`${k}.lora_A.weight`, [r, inFeatures]);
      add(`${k}.lora_B.weight`, [outFeatures, r]);
    }
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(join(dir, 'adapter_model.safetensors'), Buffer.concat([len, json, ...parts]), {
    mode: 0o644,
  });
  const config = {
    peft_type: 'LORA',
    r,
    lora_alpha: 2 * r,
    target_modules: Object.values(HF_MODULE).map((m) => m.split('.')[1]),
    bias: 'none',
  };
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config), { mode: 0o644 });
}

/** One prompt per concurrent request, the same for Prism and the llama.cpp peer. */
const PROMPTS: readonly string[] = Array.from(
  { length: CONC },
  (_, i) => `Request ${i}: write a short story about a lighthouse keeper and the sea.`,
);

async function runScenario(engine: EngineCore, adapters: string[]): Promise<number> {
  const started = performance.now();
  let tokens = 0;
  await Promise.all(
    Array.from({ length: CONC }, async (_, i) => {
      const adapter = adapters.length > 0 ? adapters[i % adapters.length] : undefined;
      for await (const ev of engine.generate({
        prompt: { kind: 'text', text: PROMPTS[i]! },
        params: { maxNewTokens: NEW, temperature: 0, ignoreEos: true },
        ...(adapter ? { adapter } : {}),
      })) {
        if (ev.type === 'finish') tokens += ev.tokenIds.length;
      }
    }),
  );
  return tokens / ((performance.now() - started) / 1000);
}

/** Greedy token ids of one text prompt through Prism's engine, optionally with an adapter. */
async function prismGreedy(engine: EngineCore, text: string, n: number, adapter?: string): Promise<number[]> {
  for await (const ev of engine.generate({
    prompt: { kind: 'text', text },
    params: { maxNewTokens: n, temperature: 0, ignoreEos: true },
    ...(adapter ? { adapter } : {}),
  }))
    if (ev.type === 'finish') return [...ev.tokenIds];
  throw new Error('no finish event');
}

/**
 * llama.cpp with one adapter (rank 8 and 64, converted from the very PEFT files Prism loads)
 * against Prism with the same adapter on every request, interleaved round by round.
 */
async function comparePeer(
  engine: EngineCore,
  modelPath: string,
  base: BaseShape,
  dir: string,
): Promise<void> {
  await useProjectPython();
  const threads = args.threads ? Number(args.threads) : availableParallelism();
  const peerOptions = { modelPath, threads, concurrency: CONC, tokensPerSequence: 64 + NEW };
  const heads = { numHeads: base.numHeads, numKvHeads: base.numKvHeads };

  // The conversion is right only if llama.cpp follows the trained adapter as Prism does. The
  // two engines round activations differently (on this model Prism keeps int16, llama.cpp
  // int8), so near-ties can split their greedy paths with or without an adapter: the check
  // prints how many leading tokens agree with the base model and with the adapter side by side.
  const trained = ensureTrainedAdapters();
  await convertToGgufLora(trained.paths.fr, join(dir, 'fr.gguf'), heads);
  await engine.loadAdapter('fr', trained.paths.fr);
  const single = { ...peerOptions, concurrency: 1 };
  const [basePeer, frPeer] = [
    await LlamaLoraPeer.load(single),
    await LlamaLoraPeer.load(single, join(dir, 'fr.gguf')),
  ];
  const leading = (x: number[], y: number[]) => {
    let i = 0;
    while (i < x.length && x[i] === y[i]) i++;
    return i;
  };
  console.log(
    `\nllama.cpp peer check: leading greedy tokens (of 12) equal to Prism's, base model | trained 'fr' adapter converted to GGUF`,
  );
  for (const prompt of trained.heldOut) {
    const b = leading(await prismGreedy(engine, prompt, 12), await basePeer.greedyText(prompt, 12));
    const f = leading(await prismGreedy(engine, prompt, 12, 'fr'), await frPeer.greedyText(prompt, 12));
    console.log(`- ${JSON.stringify(prompt)}: ${b} | ${f}`);
  }
  await basePeer.dispose();
  await frPeer.dispose();
  await engine.unloadAdapter('fr');

  const peers: { label: string; peer: LlamaLoraPeer; rank: number }[] = [];
  peers.push({ label: 'base only', peer: await LlamaLoraPeer.load(peerOptions), rank: 0 });
  for (const rank of RANKS) {
    const file = join(dir, `r${rank}-0.gguf`);
    await convertToGgufLora(join(dir, `r${rank}-0`), file, heads);
    peers.push({ label: `1 adapter r${rank}`, peer: await LlamaLoraPeer.load(peerOptions, file), rank });
  }
  const prism = new Map<string, number[]>();
  const llama = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, v: number) => m.set(k, [...(m.get(k) ?? []), v]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const { label, peer, rank } of peers) {
      const name = rank ? `r${rank}-0` : undefined;
      if (name) await engine.loadAdapter(name, join(dir, name));
      push(prism, label, await runScenario(engine, name ? [name] : []));
      if (name) await engine.unloadAdapter(name);
      push(llama, label, await peer.throughput(PROMPTS, NEW));
      process.stderr.write(
        `bench:lora peer round ${round + 1} ${label}: Prism ${prism.get(label)!.at(-1)!.toFixed(1)}, llama.cpp ${llama.get(label)!.at(-1)!.toFixed(1)} tok/s\n`,
      );
    }
  }
  for (const { peer } of peers) await peer.dispose();
  console.log(
    `concurrency ${CONC}, ${NEW} new tokens per request, ${threads} threads each, medians of ${ROUNDS} interleaved rounds`,
  );
  console.log(
    '| scenario | Prism tok/s | llama.cpp tok/s | Prism ÷ llama.cpp | Prism vs its base | llama.cpp vs its base |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  const pb = median(prism.get('base only')!);
  const lb = median(llama.get('base only')!);
  for (const { label } of peers) {
    const p = median(prism.get(label)!);
    const l = median(llama.get(label)!);
    console.log(
      `| ${label} | ${p.toFixed(1)} | ${l.toFixed(1)} | ${(p / l).toFixed(2)}× | ${((p / pb) * 100).toFixed(0)}% | ${((l / lb) * 100).toFixed(0)}% |`,
    );
  }
}

async function main(): Promise<void> {
  const modelPath = ensureDefaultModel();
  const probe = await loadModel(modelPath);
  const base = baseShapeOf(modelInfo(probe));
  disposeModel(probe);
  const dir = mkdtempSync(join(tmpdir(), 'prism-bench-lora-'));
  try {
    for (const r of RANKS)
      for (let i = 0; i < Math.max(...COUNTS); i++)
        writeAdapter(join(dir, `r${r}-${i}`), base, r, 1000 * r + i);
    const engine = await loadEngine(modelPath, {
      maxBatchSize: CONC,
      maxPrefillTokens: 2048,
      maxSeqLen: 512,
      maxInputTokenLen: 256,
      kvCacheBytes: 128 << 20,
      ...(args.threads ? { threads: Number(args.threads) } : {}),
      lora: { maxLoras: 8, maxLoraRank: 64, modules: [] },
    });
    const scenarios: { label: string; adapters: string[]; rank: number }[] = [
      { label: 'base only', adapters: [], rank: 0 },
    ];
    for (const rank of RANKS)
      for (const n of COUNTS)
        scenarios.push({
          label: `${n} adapter${n > 1 ? 's' : ''} r${rank}`,
          adapters: Array.from({ length: n }, (_, i) => `r${rank}-${i}`),
          rank,
        });
    const loadMs: Record<number, number[]> = Object.fromEntries(RANKS.map((r) => [r, []]));
    const results = new Map<string, number[]>();
    await runScenario(engine, []); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const sc of scenarios) {
        for (const name of sc.adapters) {
          const { loadMs: ms } = await engine.loadAdapter(name, join(dir, name));
          loadMs[sc.rank]!.push(ms);
        }
        const tps = await runScenario(engine, sc.adapters);
        for (const name of sc.adapters) await engine.unloadAdapter(name);
        results.set(sc.label, [...(results.get(sc.label) ?? []), tps]);
        process.stderr.write(`bench:lora round ${round + 1} ${sc.label}: ${tps.toFixed(1)} tok/s\n`);
      }
    }
    const baseTps = median(results.get('base only')!);
    console.log(
      `\nconcurrency ${CONC}, ${NEW} new tokens per request, medians of ${ROUNDS} rounds (default model)`,
    );
    console.log('| scenario | output tok/s | vs base |');
    console.log('| --- | ---: | ---: |');
    for (const sc of scenarios) {
      const t = median(results.get(sc.label)!);
      console.log(`| ${sc.label} | ${t.toFixed(1)} | ${((t / baseTps) * 100).toFixed(0)}% |`);
    }
    for (const r of RANKS)
      console.log(
        `adapter load time r${r} (all 7 linear layers × ${base.numLayers} layers, F16 file): median ${median(loadMs[r]!).toFixed(1)} ms`,
      );
    if (!args['no-peer']) await comparePeer(engine, modelPath, base, dir);
    await engine.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
