/**
 * `npm run bench:structured`: the cost of structured output, in one run on the default model.
 *
 *  1. Output tokens/s, unconstrained vs `json_schema`, at concurrency 1 and 16 (A/B
 *     interleaved, medians of rounds). Both sides generate exactly `maxTokens` tokens per
 *     request (unconstrained with ignore_eos; the schema is an open-ended array so the
 *     document never ends first), so the batch shapes match and only the mask differs.
 *  2. Grammar compile time p50/p99, cold (distinct JSONSchemaBench schemas, first time) and
 *     cached (the same again), as the grammar thread measures it and as a request waits.
 *  3. Per-token mask time p50/p99 (the grammar thread's fill of one ceil(V/32) bitmask), and
 *     the check of a finished document where the grammar enforces a schema only in part
 *     (round trip to the grammar thread + ajv), as a share of a request's time.
 *  4. The peer: the same schema through llama.cpp's JSON-schema grammar (node-llama-cpp,
 *     GBNF sampler), one sequence, with and without the grammar.
 *
 * Usage: npm run bench:structured [-- --rounds 3 --tokens 64]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Token } from 'node-llama-cpp';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import { MINDIE_CONTEXT_LIMITS } from '../engine/options.js';
import { GrammarService } from '../engine/structured/grammar-service.js';
import type { GrammarConstraint } from '../engine/structured/constraint.js';
import { checkConstraint } from '../engine/structured/validate.js';
import { loadTokenizer } from '../engine/tokenizer/index.js';
import type { EngineCore } from '../engine/engine-core.js';
import type { StructuredTuning } from '../engine/structured/tuning.js';
import type { Constraint, GenerateRequest } from '../engine/types.js';
import { jsonSchemaBenchDir, sampleFiles } from './jsonschemabench.js';
import { loadPrebuiltLlamaModel } from './engine/llamacpp.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
    schemas: { type: 'string', default: '40' },
    /** Only the engine's A/B (no compile timings, no llama.cpp peer). */
    'engine-only': { type: 'boolean', default: false },
  },
});
const rounds = Number(args.rounds);
const maxTokens = Number(args.tokens);
const threads = Number(args.threads);

/**
 * Open-ended (an array of at least 40 records), so every request runs to max_tokens under the
 * grammar too: both sides then generate the same number of tokens.
 */
const SCHEMA = {
  type: 'object',
  properties: {
    people: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string', maxLength: 24 }, city: { type: 'string', maxLength: 24 } },
        required: ['name', 'city'],
      },
      // More records than fit in the token budget: the array cannot close early.
      minItems: 40,
    },
  },
  required: ['people'],
};
const constraint: Constraint = { kind: 'json_schema', schema: JSON.stringify(SCHEMA) };
/**
 * The same schema with `uniqueItems` on the records, which no grammar enforces: the grammar
 * enforces the rest and each finished document is checked (engine/structured/choice-checks.ts),
 * so the request's output is held until then.
 */
const CHECKED_SCHEMA = {
  ...SCHEMA,
  properties: { people: { ...SCHEMA.properties.people, uniqueItems: true } },
};
const checkedConstraint: Constraint = { kind: 'json_schema', schema: JSON.stringify(CHECKED_SCHEMA) };
const PROMPT = 'List people and the cities they live in, as JSON.';

function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}
const median = (xs: readonly number[]) => quantile(xs, 0.5);
const f1 = (x: number) => x.toFixed(1);
const f3 = (x: number) => x.toFixed(3);

/** One side of the A/B: what the engine does for the request. */
interface Variant {
  readonly name: string;
  readonly constrained: boolean;
  /** Masks computed while the forward pass runs (off: awaited before each step). */
  readonly overlap: boolean;
  /** Jump-forward: forced tokens appended without sampling. */
  readonly jump: boolean;
  /** The schema with a keyword checked on the finished document (output held until then). */
  readonly checked?: boolean;
}
const VARIANTS: readonly Variant[] = [
  { name: 'unconstrained', constrained: false, overlap: true, jump: false },
  { name: 'json_schema, masks before the step', constrained: true, overlap: false, jump: false },
  { name: 'json_schema, masks during the forward pass', constrained: true, overlap: true, jump: false },
  {
    name: 'json_schema, masks before the step + jump-forward',
    constrained: true,
    overlap: false,
    jump: true,
  },
  {
    name: 'json_schema, masks during the forward pass + jump-forward',
    constrained: true,
    overlap: true,
    jump: true,
  },
  {
    name: 'json_schema + uniqueItems (output held for the check), masks during the forward pass + jump-forward',
    constrained: true,
    overlap: true,
    jump: true,
    checked: true,
  },
];
/** The default path for an exact schema (the check's paired baseline). */
const EXACT_DEFAULT = VARIANTS.length - 2;

/**
 * The engine's structured-output switches, flipped between the paired runs on one loaded
 * engine, and the critical path's waits for masks (ms per constrained step) it reports.
 */
const maskWaits: number[] = [];
const tuning: StructuredTuning = { onMaskWait: (ms) => maskWaits.push(ms) };

async function throughput(
  engine: EngineCore,
  concurrency: number,
  v: Variant,
  seed: number,
): Promise<number> {
  tuning.overlapMasks = v.overlap;
  tuning.jumpForward = v.jump;
  const request = (i: number): GenerateRequest => ({
    prompt: { kind: 'chat', messages: [{ role: 'user', content: PROMPT }] },
    params: { maxNewTokens: maxTokens, temperature: 0.7, seed: seed + i, ignoreEos: !v.constrained },
    ...(v.constrained ? { constraint: v.checked ? checkedConstraint : constraint } : {}),
  });
  const t0 = performance.now();
  let tokens = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      for await (const ev of engine.generate(request(i)))
        if (ev.type === 'token') tokens += ev.tokenIds.length;
    }),
  );
  return tokens / ((performance.now() - t0) / 1000);
}

/** A constrained request's wall time at concurrency 1 (ms), measured by engineThroughput. */
let requestMs = NaN;

async function engineThroughput(): Promise<string[]> {
  const engine = await loadEngine(
    ensureDefaultModel(),
    {
      maxBatchSize: 16,
      threads,
      kvCacheBytes: 128 << 20,
      // The limits these runs were measured with (MindIE's defaults), not the model's 8,192-token context.
      ...MINDIE_CONTEXT_LIMITS,
    },
    { structuredTuning: tuning },
  );
  const out: string[] = [];
  try {
    // Warm the grammar cache and the prefix cache outside the timed part.
    for (const v of VARIANTS) await throughput(engine, 2, v, 0);
    for (const c of [1, 16]) {
      const runs = VARIANTS.map(() => [] as number[]);
      /** Per variant: the critical path's wait for masks, per constrained step (ms). */
      const stalls = VARIANTS.map(() => [] as number[]);
      const jumped = VARIANTS.map(() => 0);
      for (let r = 0; r < rounds; r++)
        for (const [k, v] of VARIANTS.entries()) {
          maskWaits.length = 0;
          const j0 = engine.features.structured.jumpedTokens;
          runs[k]!.push(await throughput(engine, c, v, 100 * r));
          stalls[k]!.push(...maskWaits);
          jumped[k]! += engine.features.structured.jumpedTokens - j0;
        }
      // Paired: each round's ratio to the unconstrained run just before it (the machine's
      // load drifts between rounds far more than between neighbouring runs).
      // A constrained request's time on the default path (exact schema), for the check's share.
      if (c === 1) requestMs = (maxTokens / median(runs[EXACT_DEFAULT]!)) * 1000;
      VARIANTS.forEach((v, k) => {
        // The checked schema is paired with the exact one on the same path (the check's cost).
        const base = v.checked ? EXACT_DEFAULT : 0;
        const ratio = median(runs[k]!.map((x, r) => x / runs[base]![r]!));
        const slow = (1 - ratio) * 100;
        const vs = v.checked ? ' than the exact schema' : '';
        const cost = k === 0 ? '—' : slow >= 0 ? `${f1(slow)}% slower${vs}` : `${f1(-slow)}% faster${vs}`;
        const st = stalls[k]!;
        const stall =
          k === 0
            ? '—'
            : `${f3(st.reduce((a, b) => a + b, 0) / Math.max(1, st.length))} / ${f3(quantile(st, 0.99))}`;
        const steps = k === 0 ? '—' : f1(st.length / rounds);
        const jumps = k === 0 ? '—' : f1(jumped[k]! / (rounds * c));
        out.push(
          `| ${c} | ${v.name} | ${f1(median(runs[k]!))} | ${cost} | ${stall} | ${steps} | ${jumps} | ${runs[k]!.map(f1).join(', ')} |`,
        );
      });
      console.error(
        `concurrency ${c}: ${VARIANTS.map((v, k) => `${v.name} ${runs[k]!.map(f1).join(' ')}`).join('; ')}`,
      );
    }
  } finally {
    await engine.close();
  }
  return out;
}

async function compileAndMask(modelPath: string): Promise<string[]> {
  const tok = await loadTokenizer(modelPath);
  /** Per-token mask times (ms) as the grammar thread measured them. */
  const m: number[] = [];
  const svc = new GrammarService({
    vocab: tok.grammarVocab(),
    vocabSize: tok.vocabSize,
    stopTokenIds: tok.eosTokenIds,
    cacheSize: 1024,
    onMaskTime: (ms) => m.push(ms),
  });
  try {
    // The tokenizer info is built by the first compile: not a per-schema cost.
    await svc.compile({ kind: 'json_object' });
    // Function-call parameter schemas: what API clients send. (Some Github/Kubernetes schemas
    // take seconds to minutes cold; bench/jsonschemabench.ts covers those.)
    const dir = join(jsonSchemaBenchDir(), 'Glaiveai2K');
    const schemas = sampleFiles(dir, Number(args.schemas)).map((f) => readFileSync(join(dir, f), 'utf8'));
    const cold: number[] = [];
    const cachedWait: number[] = [];
    let failed = 0;
    const compiled: GrammarConstraint[] = [];
    for (const schema of schemas) {
      try {
        // Cold: the engine's check (it prepares the schema) and the compile on the grammar thread.
        const t0 = performance.now();
        const checked = checkConstraint({ kind: 'json_schema', schema });
        const prepareMs = performance.now() - t0;
        cold.push(prepareMs + (await svc.compile(checked)).ms);
        compiled.push(checked);
      } catch {
        failed++;
      }
    }
    for (const checked of compiled) {
      const t0 = performance.now();
      await svc.compile(checked);
      cachedWait.push(performance.now() - t0);
    }
    // Mask times: walk a document of the benchmark schema token by token.
    const { key } = await svc.compile(checkConstraint(constraint));
    const doc = JSON.stringify({
      people: Array.from({ length: 20 }, (_, i) => ({ name: `Person ${i}`, city: 'Paris' })),
    });
    m.length = 0;
    for (let r = 0; r < 5; r++) {
      const g = svc.createMatcher(key);
      await g.pending;
      for (const id of tok.encode(doc, { addSpecialTokens: false })) {
        g.accept([id]);
        await g.pending;
      }
      svc.free(g);
    }
    // The check of a finished document, for a schema the grammar enforces only in part
    // (uniqueItems): the round trip to the grammar thread and ajv's validation, per choice.
    const checkedSchema = structuredClone(SCHEMA) as { properties: { people: Record<string, unknown> } };
    checkedSchema.properties.people.uniqueItems = true;
    const checked = await svc.compile(
      checkConstraint({ kind: 'json_schema', schema: JSON.stringify(checkedSchema) }),
    );
    if (!checked.checked) throw new Error('the benchmark schema was expected to need a document check');
    // A finished document (the schema asks for at least 40 records; `doc` above is a prefix).
    const finished = JSON.stringify({
      people: Array.from({ length: 40 }, (_, i) => ({ name: `Person ${i}`, city: 'Paris' })),
    });
    const checks: number[] = [];
    for (let r = 0; r < 200; r++) {
      const t0 = performance.now();
      const invalid = await svc.checkDocument(checked.key, finished);
      checks.push(performance.now() - t0);
      if (invalid !== null) throw new Error(`the benchmark document fails its check: ${invalid}`);
    }
    return [
      `| compile, cold (${cold.length} JSONSchemaBench Glaiveai2K schemas${failed ? `, ${failed} refused` : ''}) | ${f1(median(cold))} | ${f1(quantile(cold, 0.99))} |`,
      `| compile, cached (request wait incl. thread round trip) | ${f3(median(cachedWait))} | ${f3(quantile(cachedWait, 0.99))} |`,
      `| mask per token (${m.length} tokens, V = ${tok.vocabSize}) | ${f3(median(m))} | ${f3(quantile(m, 0.99))} |`,
      `| document check per finished choice (uniqueItems, ${finished.length}-byte document; thread round trip + ajv)${Number.isNaN(requestMs) ? '' : `: ${f3((100 * median(checks)) / requestMs)}% of a ${maxTokens}-token request (${f1(requestMs)} ms)`} | ${f3(median(checks))} | ${f3(quantile(checks, 0.99))} |`,
    ];
  } finally {
    await svc.close();
  }
}

async function llamaPeer(modelPath: string): Promise<string[]> {
  const { llama, model } = await loadPrebuiltLlamaModel(modelPath, threads);
  const { LlamaGrammarEvaluationState } = await import('node-llama-cpp');
  const context = await model.createContext({
    contextSize: 1024,
    sequences: 1,
    threads: { ideal: threads, min: threads },
  });
  const tokens = model.tokenize(`<|im_start|>user\n${PROMPT}<|im_end|>\n<|im_start|>assistant\n`, true);
  const grammar = await llama.createGrammarForJsonSchema(SCHEMA as never);
  // llama.cpp's grammar sampler checks the grammar against the whole vocabulary per token
  // (over a second per token here), so the grammar side is timed over fewer tokens.
  const run = async (withGrammar: boolean): Promise<number> => {
    const limit = withGrammar ? Math.min(maxTokens, 12) : maxTokens;
    const sequence = context.getSequence();
    try {
      const state = withGrammar ? new LlamaGrammarEvaluationState({ model, grammar }) : undefined;
      let n = 0;
      let first = 0;
      for await (const _t of sequence.evaluate(tokens as Token[], {
        temperature: 0.7,
        seed: 1,
        yieldEogToken: true,
        ...(state ? { grammarEvaluationState: state } : {}),
      })) {
        if (n === 0) first = performance.now();
        if (++n === limit) break;
      }
      return (n - 1) / ((performance.now() - first) / 1000);
    } finally {
      sequence.dispose();
    }
  };
  await run(false);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < Math.min(rounds, 2); r++) {
    a.push(await run(false));
    b.push(await run(true));
  }
  await context.dispose();
  await model.dispose();
  const slow = (1 - median(b) / median(a)) * 100;
  return [
    `| llama.cpp (node-llama-cpp ${llama.llamaCppRelease.release}), GBNF from the JSON schema, 1 sequence | ${f1(median(a))} | ${f1(median(b))} | ${f1(slow)}% slower | ${a.map(f1).join(', ')} / ${b.map(f1).join(', ')} |`,
  ];
}

const modelPath = ensureDefaultModel();
const head =
  '| concurrency | request | output tok/s (median) | vs unconstrained (median of paired rounds) | mask wait per constrained step, mean / p99 ms | constrained steps per round | tokens jumped per request | rounds |\n' +
  '|---|---|---|---|---|---|---|---|';
const prism = await engineThroughput();
console.log(
  `Prism, ${maxTokens} output tokens per request, ${rounds} interleaved rounds, threads ${threads}:\n`,
);
console.log(`${head}\n${prism.join('\n')}\n`);
if (args['engine-only']) process.exit(0);
console.error('compile and mask timings ...');
const timings = await compileAndMask(modelPath);
console.log('| grammar work | p50 ms | p99 ms |\n|---|---|---|');
console.log(`${timings.join('\n')}\n`);
console.error('llama.cpp peer ...');
const peer = await llamaPeer(modelPath);
console.log('| peer | unconstrained tok/s | with grammar tok/s | cost | rounds |\n|---|---|---|---|---|');
console.log(peer.join('\n'));
