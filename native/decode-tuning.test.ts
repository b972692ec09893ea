/**
 * ContextOptions.decodeTuning (native/src/decode_tuning/): every setting decodes the same
 * tokens to the same bits (a tuning moves only prefetches and tile heights, and each row
 * sums its groups in the same order whatever the tile height); bad requests are refused
 * naming the option and the rule; `measure` caches a conclusive choice that the next
 * `auto` load reads back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contextInfo,
  createContext,
  disposeContext,
  disposeModel,
  hostInfo,
  loadModel,
  step,
  type ContextOptions,
  type ModelHandle,
} from './native.js';
import { greedyPlan } from '../bench/engine/plan.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { fixture } from '../test/fixtures.js';

const BLOCK = 16;
const BLOCKS = [0, 1, 2, 3];
const PROMPT = [504, 3575, 282, 4649, 314, 7042, 30, 378];
const NEW_TOKENS = 6;

function options(decodeTuning?: string): ContextOptions {
  return {
    kvBlocks: BLOCKS.length,
    blockSize: BLOCK,
    maxBatchTokens: 16,
    maxSeqs: 1,
    threads: 2,
    ...(decodeTuning === undefined ? {} : { decodeTuning }),
  };
}

describe('decode tuning', () => {
  let model: ModelHandle;
  const cacheDir = mkdtempSync(join(tmpdir(), 'prism-decode-tuning-'));
  const savedEnv = { dir: process.env.PRISM_CACHE_DIR, tuning: process.env.PRISM_DECODE_TUNING };

  before(async () => {
    // The cache lands in a temporary folder, never the user's.
    process.env.PRISM_CACHE_DIR = cacheDir;
    delete process.env.PRISM_DECODE_TUNING;
    model = await loadModel(ensureDefaultModel());
  });
  after(() => {
    disposeModel(model);
    rmSync(cacheDir, { recursive: true, force: true });
    for (const [key, value] of [
      ['PRISM_CACHE_DIR', savedEnv.dir],
      ['PRISM_DECODE_TUNING', savedEnv.tuning],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  /**
   * The host default's setting: the constants, with a T1 prefetch on AVX-512 hosts and the
   * class's tile height and split there (Intel: 8 rows on family 6 model 207, 2 rows and stolen
   * row tiles elsewhere; AMD: the kernels' own rows and stolen row tiles; choose.cc).
   */
  function hostDefaultSetting(): string {
    const probe = createContext(model, options('off'));
    const cpu = hostInfo().cpu;
    const avx512 = contextInfo(probe).isa === 'avx512';
    disposeContext(probe);
    if (avx512 && cpu.startsWith('AuthenticAMD')) return 'prefetch=t1:1,rows=auto,idle=on,split=steal';
    if (!avx512 || !cpu.startsWith('GenuineIntel')) return 'prefetch=nta:1,rows=auto,idle=on';
    return cpu.includes(' family 6 model 207 ')
      ? 'prefetch=t1:1,rows=8,idle=on'
      : 'prefetch=t1:1,rows=2,idle=on,split=steal';
  }

  /** The logits of the prompt's last token and of NEW_TOKENS greedy decode steps after it. */
  async function decodeLogits(
    decodeTuning: string,
    on: ModelHandle = model,
  ): Promise<{ setting: string; logits: Float32Array[] }> {
    const ctx = createContext(on, options(decodeTuning));
    try {
      const setting = contextInfo(ctx).decodeTuning!.setting;
      const logits: Float32Array[] = [];
      let r = await step(ctx, {
        ...greedyPlan([{ tokens: PROMPT, startPosition: 0, blocks: BLOCKS, sample: true }], BLOCK),
        returnLogits: 'last',
      });
      for (let i = 0; i < NEW_TOKENS; i++) {
        logits.push(r.logits!);
        r = await step(ctx, {
          ...greedyPlan(
            [{ tokens: [r.tokens[0]!], startPosition: PROMPT.length + i, blocks: BLOCKS, sample: true }],
            BLOCK,
          ),
          returnLogits: 'last',
        });
      }
      logits.push(r.logits!);
      return { setting, logits };
    } finally {
      disposeContext(ctx);
    }
  }

  it('every setting decodes to the same bits as the constants', async () => {
    const base = await decodeLogits('off');
    assert.equal(base.setting, 'prefetch=nta:1,rows=auto,idle=on');
    for (const spec of [
      'prefetch=t1:2,rows=8,idle=off',
      'prefetch=off,rows=1',
      'prefetch=t0:0.5,rows=2',
      'prefetch=nta:1.5,rows=4,idle=on',
    ]) {
      const got = await decodeLogits(spec);
      assert.equal(got.setting.split(',').length, 3, got.setting);
      assert.equal(got.logits.length, base.logits.length);
      for (let s = 0; s < got.logits.length; s++)
        assert.deepEqual(got.logits[s], base.logits[s], `${spec}: step ${s} differs from the constants`);
    }
  });

  it('split=steal: the group layouts decode to the same bits whichever thread takes a row tile', async () => {
    // With int8 activations (the rule's choice from hidden 1024 up, forced here on the small
    // fixtures) Q4_0, Q4_1 and Q8_0 decode through q4gMatmul's tiles; the 49,152-row head
    // gives the faster thread tiles to take from the other's share.
    for (const name of ['llama-q4_0', 'llama-q4_1', 'llama-q8_0']) {
      const saved = process.env.PRISM_ACTIVATIONS;
      process.env.PRISM_ACTIVATIONS = 'int8';
      let fixtureModel: ModelHandle;
      try {
        fixtureModel = await loadModel(fixture(name).path);
      } finally {
        if (saved === undefined) delete process.env.PRISM_ACTIVATIONS;
        else process.env.PRISM_ACTIVATIONS = saved;
      }
      try {
        const even = await decodeLogits('off', fixtureModel);
        const steal = await decodeLogits('split=steal', fixtureModel);
        assert.equal(steal.setting, 'prefetch=nta:1,rows=auto,idle=on,split=steal');
        for (let s = 0; s < even.logits.length; s++)
          assert.deepEqual(steal.logits[s], even.logits[s], `${name}: step ${s} differs from the even split`);
      } finally {
        disposeModel(fixtureModel);
      }
    }
  });

  it('reports a given setting as given, in its canonical form', () => {
    const ctx = createContext(model, options('rows=8,prefetch=t1:2'));
    try {
      const t = contextInfo(ctx).decodeTuning!;
      assert.equal(t.source, 'given');
      assert.equal(t.setting, 'prefetch=t1:2,rows=8,idle=on');
      assert.equal(t.measuredMs, 0);
    } finally {
      disposeContext(ctx);
    }
  });

  it('refuses bad requests, naming the option and the rule', () => {
    const cases: [unknown, RegExp][] = [
      ['', /options\.decodeTuning must not be empty/],
      [
        'fast',
        /options\.decodeTuning must be auto, measure, host, off or a setting.*'fast' is not key=value/,
      ],
      ['rows=3', /rows must be auto, 1, 2, 4 or 8; got '3'/],
      ['prefetch=nta:9', /prefetch distance must be a multiple of 0\.5 tiles from 0\.5 to 8; got '9'/],
      ['prefetch=nta:0.3', /multiple of 0\.5 tiles/],
      ['prefetch=l3:1', /prefetch must be off or nta\|t0\|t1/],
      ['prefetch=off:1', /prefetch=off takes no distance/],
      ['idle=maybe', /idle must be on or off/],
      ['threads=2', /unknown key 'threads'/],
      ['split=random', /split must be even or steal; got 'random'/],
    ];
    for (const [value, message] of cases)
      assert.throws(
        () => createContext(model, { ...options(), decodeTuning: value as string }),
        (e: Error) => e instanceof RangeError && message.test(e.message),
        String(value),
      );
    assert.throws(
      () => createContext(model, { ...options(), decodeTuning: 7 as unknown as string }),
      (e: Error) => e instanceof TypeError && /options\.decodeTuning must be a string/.test(e.message),
    );
  });

  it('defaults to the host default; PRISM_DECODE_TUNING picks another, and an invalid one is ignored', () => {
    const sourceWith = (env: string | undefined) => {
      if (env === undefined) delete process.env.PRISM_DECODE_TUNING;
      else process.env.PRISM_DECODE_TUNING = env;
      try {
        const ctx = createContext(model, options());
        const t = contextInfo(ctx).decodeTuning!;
        disposeContext(ctx);
        return `${t.source} ${t.setting}`;
      } finally {
        delete process.env.PRISM_DECODE_TUNING;
      }
    };
    // 'host': the constants, with a T1 prefetch and the class's rows and split on AVX-512 hosts (measured faster there).
    const hostDefault = `host ${hostDefaultSetting()}`;
    assert.equal(sourceWith(undefined), hostDefault);
    assert.equal(sourceWith('off'), 'off prefetch=nta:1,rows=auto,idle=on');
    assert.equal(sourceWith('prefetch=t0:2'), 'given prefetch=t0:2,rows=auto,idle=on');
    assert.equal(sourceWith('rows=3'), hostDefault);
  });

  it('auto starts from the host default: weights that fit the cache, or a race too noisy to decide, keep it', () => {
    // The default model's ~66 MB of layer weights fit a large last-level cache (then auto does
    // not measure); on a smaller cache auto races from the host default (measure.h).
    const ctx = createContext(model, options('auto'));
    const t = contextInfo(ctx).decodeTuning!;
    disposeContext(ctx);
    if (t.source === 'fits-cache' || t.source === 'inconclusive')
      assert.equal(t.setting, hostDefaultSetting());
    else assert.ok(['measured', 'cached'].includes(t.source), t.source);
    if (t.source === 'fits-cache') assert.equal(t.measuredMs, 0);
  });

  it('measure races the settings and caches a conclusive choice for the next auto load', () => {
    // A folder of its own: on a host whose last-level cache the weights overflow, the `auto`
    // test above raced too and may have cached its conclusive choice in the shared folder.
    const ownDir = mkdtempSync(join(cacheDir, 'measure-'));
    process.env.PRISM_CACHE_DIR = ownDir;
    const ctx = createContext(model, options('measure'));
    const measured = contextInfo(ctx).decodeTuning!;
    disposeContext(ctx);
    assert.ok(['measured', 'inconclusive'].includes(measured.source), measured.source);
    assert.ok(measured.measuredMs > 0);
    assert.match(measured.detail, /^prefetch: \d+ rounds/);
    assert.equal(measured.cachePath, join(ownDir, 'decode-tuning.json'));
    if (measured.source === 'inconclusive') {
      // A machine too busy to tell the settings apart keeps the host default and caches nothing.
      assert.equal(measured.setting, hostDefaultSetting());
      assert.ok(!existsSync(measured.cachePath));
      // ... and this process does not race the same key again.
      const again = createContext(model, options('auto'));
      const memo = contextInfo(again).decodeTuning!;
      disposeContext(again);
      assert.equal(`${memo.source} ${memo.measuredMs}`, 'inconclusive 0');
      return;
    }
    const file = JSON.parse(readFileSync(measured.cachePath, 'utf8')) as {
      entries: { cpu: string; tuning: string; threads: number }[];
    };
    assert.equal(file.entries.length, 1);
    assert.equal(file.entries[0]!.cpu, hostInfo().cpu);
    assert.equal(file.entries[0]!.tuning, measured.setting);
    assert.equal(file.entries[0]!.threads, 2);
    const again = createContext(model, options('auto'));
    const cached = contextInfo(again).decodeTuning!;
    disposeContext(again);
    assert.equal(cached.source, 'cached');
    assert.equal(cached.setting, measured.setting);
    assert.equal(cached.measuredMs, 0);
  });
});
