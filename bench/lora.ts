/**
 * Multi-LoRA benchmark: output tok/s of the in-process engine at concurrency 16 with the base
 * model only and with 1, 4 and 8 distinct adapters (rank 8 and rank 64, all seven linear
 * layers) mixed evenly across the requests, and the adapter load time. Adapters are written
 * as real PEFT directories (adapter_config.json + F16 adapter_model.safetensors, random
 * weights) into a temporary folder and loaded through the engine's own loader.
 *
 *   npm run bench:lora [-- --rounds N --new-tokens N --threads N]
 *
 * Scenarios are run round-robin (--rounds times, median reported), so machine drift hits all
 * alike. Not measured here: llama.cpp with an adapter (node-llama-cpp needs a GGUF LoRA; no
 * converter from PEFT ships with the project).
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineCore } from '../engine/engine-core.js';
import { modelInfo, loadModel, disposeModel } from '../native/native.js';
import { targetShape, type BaseShape } from '../engine/adapters/peft-reader.js';
import { LORA_TARGETS } from '../engine/adapters/names.js';
import { baseShapeOf } from '../engine/adapters/native-adapter.js';
import { median } from './stats.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    'new-tokens': { type: 'string', default: '48' },
    threads: { type: 'string' },
    concurrency: { type: 'string', default: '16' },
  },
});
const ROUNDS = Number(args.rounds);
const NEW = Number(args['new-tokens']);
const CONC = Number(args.concurrency);

const HF_MODULE: Record<string, string> = {
  q: 'self_attn.q_proj',
  k: 'self_attn.k_proj',
  v: 'self_attn.v_proj',
  o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj',
  up: 'mlp.up_proj',
  down: 'mlp.down_proj',
};

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

async function runScenario(engine: EngineCore, adapters: string[]): Promise<number> {
  const started = performance.now();
  let tokens = 0;
  await Promise.all(
    Array.from({ length: CONC }, async (_, i) => {
      const adapter = adapters.length > 0 ? adapters[i % adapters.length] : undefined;
      for await (const ev of engine.generate({
        prompt: {
          kind: 'text',
          text: `Request ${i}: write a short story about a lighthouse keeper and the sea.`,
        },
        params: { maxNewTokens: NEW, temperature: 0, ignoreEos: true },
        ...(adapter ? { adapter } : {}),
      })) {
        if (ev.type === 'finish') tokens += ev.tokenIds.length;
      }
    }),
  );
  return tokens / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const modelPath = ensureDefaultModel();
  const probe = await loadModel(modelPath);
  const base = baseShapeOf(modelInfo(probe));
  disposeModel(probe);
  const dir = mkdtempSync(join(tmpdir(), 'prism-bench-lora-'));
  try {
    for (const r of [8, 64])
      for (let i = 0; i < 8; i++) writeAdapter(join(dir, `r${r}-${i}`), base, r, 1000 * r + i);
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
    for (const rank of [8, 64])
      for (const n of [1, 4, 8])
        scenarios.push({
          label: `${n} adapter${n > 1 ? 's' : ''} r${rank}`,
          adapters: Array.from({ length: n }, (_, i) => `r${rank}-${i}`),
          rank,
        });
    const loadMs: Record<number, number[]> = { 8: [], 64: [] };
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
    for (const r of [8, 64])
      console.log(
        `adapter load time r${r} (all 7 linear layers × ${base.numLayers} layers, F16 file): median ${median(loadMs[r]!).toFixed(1)} ms`,
      );
    await engine.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
