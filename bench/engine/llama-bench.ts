/**
 * The second llama.cpp peer of the engine benchmark: llama.cpp built from source for this host
 * class (scripts/build-llama-cpp.mjs: every x86 SIMD level up to AVX-512 VNNI/BF16, AMX off),
 * measured by llama.cpp's own tools, one process per run so that its runs interleave with the
 * other engines' as theirs do:
 *  - single-stream decode: `llama-bench -d PROMPT -p 0 -n NEW-1` (the NEW-1 decode steps after a
 *    PROMPT-token context, as the other engines' measure times them);
 *  - prefill: `llama-bench -p PREFILL -n 0`;
 *  - aggregate decode: `llama-batched-bench -npp PROMPT -ntg NEW -npl SEQUENCES`, its S_TG
 *    (the decode phase's tokens of all sequences per second).
 * Each tool reports its own timing of the decode or prefill phase (the model load and llama-bench's
 * warm-up run are outside it). Neither tool takes token ids: llama-bench feeds random ids and
 * batched-bench its own, so no token is compared here (the work per token of a decode step does
 * not depend on which token it is: every weight byte is read once).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { BenchEngine, DecodeTiming, PrefillTiming, TokenIds } from './types.js';

export interface LlamaBenchOptions {
  readonly bin: string;
  readonly modelPath: string;
  readonly threads: number;
}

/** One row of `llama-bench -o json`. */
interface LlamaBenchRow {
  readonly n_prompt: number;
  readonly n_gen: number;
  readonly n_depth?: number;
  readonly avg_ts: number;
  readonly cpu_info?: string;
  readonly backends?: string;
  readonly build_commit?: string;
  readonly build_number?: number;
  readonly type_k?: string;
  readonly flash_attn?: boolean | number;
}

/** The tok/s of the first row of llama-bench's JSON output, checked to be the test asked for. */
export function parseLlamaBench(stdout: string, want: { nPrompt: number; nGen: number }): LlamaBenchRow {
  let rows: unknown;
  try {
    rows = JSON.parse(stdout);
  } catch {
    throw new Error(`llama-bench printed no JSON: ${stdout.slice(0, 200)}`);
  }
  const row = Array.isArray(rows) ? (rows[0] as LlamaBenchRow | undefined) : undefined;
  if (row === undefined || typeof row.avg_ts !== 'number' || !(row.avg_ts > 0))
    throw new Error(`llama-bench's JSON has no test with a positive avg_ts: ${stdout.slice(0, 200)}`);
  if (row.n_prompt !== want.nPrompt || row.n_gen !== want.nGen)
    throw new Error(
      `llama-bench ran pp${row.n_prompt}/tg${row.n_gen}, expected pp${want.nPrompt}/tg${want.nGen}`,
    );
  return row;
}

/** S_TG (decode tokens of all sequences per second) of llama-batched-bench's one jsonl line. */
export function parseBatchedBench(stdout: string, want: { npl: number; ntg: number }): number {
  const rows = stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { pl?: number; tg?: number; speed_tg?: number });
  const row = rows.find((r) => r.pl === want.npl && r.tg === want.ntg);
  if (row === undefined || typeof row.speed_tg !== 'number' || !(row.speed_tg > 0))
    throw new Error(
      `llama-batched-bench printed no result for ${want.npl} sequences × ${want.ntg} tokens: ${stdout.slice(0, 200)}`,
    );
  return row.speed_tg;
}

export class LlamaBenchEngine implements BenchEngine {
  readonly name = 'llama.cpp source';
  private last: LlamaBenchRow | undefined;

  constructor(private readonly options: LlamaBenchOptions) {}

  private run(tool: string, args: string[]): string {
    return execFileSync(join(this.options.bin, tool), args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 16 * 2 ** 20,
    });
  }

  private bench(nPrompt: number, nGen: number, depth: number): number {
    const args = ['-m', this.options.modelPath, '-t', String(this.options.threads), '-r', '1', '-o', 'json'];
    args.push('-p', String(nPrompt), '-n', String(nGen), '-d', String(depth), '-ngl', '0');
    this.last = parseLlamaBench(this.run('llama-bench', args), { nPrompt, nGen });
    return this.last.avg_ts;
  }

  describe(): Record<string, string | number | boolean> {
    return {
      binding: `llama.cpp built from source (scripts/build-llama-cpp.mjs), ${this.options.bin}: llama-bench, llama-batched-bench`,
      ...(this.last?.build_commit
        ? { 'llama.cpp build': `${this.last.build_number} (${this.last.build_commit})` }
        : {}),
      ...(this.last?.backends ? { backends: this.last.backends } : {}),
      ...(this.last?.cpu_info ? { cpu: this.last.cpu_info } : {}),
      threads: this.options.threads,
      'token ids': "the tools' own (llama-bench: random ids), not the prompts'",
    };
  }

  async decodeSingle(prompt: TokenIds, newTokens: number): Promise<DecodeTiming> {
    const steps = newTokens - 1;
    const tokPerSec = this.bench(0, steps, prompt.length);
    return { decodedTokens: steps, decodeMs: (steps / tokPerSec) * 1000, generated: [] };
  }

  async decodeAggregate(prompts: readonly TokenIds[], newTokens: number): Promise<DecodeTiming> {
    const npp = prompts[0]?.length ?? 0;
    const npl = prompts.length;
    const args = ['-m', this.options.modelPath, '-t', String(this.options.threads), '-ngl', '0'];
    args.push('-c', String(npl * (npp + newTokens)), '-b', String(Math.max(2048, npl * npp)));
    args.push(
      '-npp',
      String(npp),
      '-ntg',
      String(newTokens),
      '-npl',
      String(npl),
      '--output-format',
      'jsonl',
    );
    const tokPerSec = parseBatchedBench(this.run('llama-batched-bench', args), { npl, ntg: newTokens });
    const decoded = npl * newTokens;
    return { decodedTokens: decoded, decodeMs: (decoded / tokPerSec) * 1000, generated: [] };
  }

  async prefill(prompt: TokenIds): Promise<PrefillTiming> {
    const tokPerSec = this.bench(prompt.length, 0, 0);
    return { promptTokens: prompt.length, prefillMs: (prompt.length / tokPerSec) * 1000, firstToken: 0 };
  }

  greedy(): Promise<number[]> {
    return Promise.reject(new Error("llama-bench generates no text: the continuations are node-llama-cpp's"));
  }

  async dispose(): Promise<void> {}
}
