/**
 * Turns a scheduled batch into the native StepPlan: flat typed arrays in CSR layout (see
 * native/native.ts), no per-token JS objects. Pure, so it is tested without the addon.
 */
import type { StepPlan } from '../native/native.js';
import { bannedTokens } from './bad-words/bad-words.js';
import type { ScheduledBatch } from './scheduler.js';
import type { Sequence } from './sequence.js';

/**
 * `lateMasks`: the constrained sequences' masks are not in the plan; each such sequence gets a
 * row now (`lateMaskRows` of them) and `lateMaskBuffer` fills the rows once the masks are
 * ready, while the forward pass runs.
 */
export function buildStepPlan(
  batch: ScheduledBatch,
  blockSize: number,
  lateMasks = false,
  /** Table entries per block (ModelInfo.kvLayout.pagesPerBlock). */
  pagesPerBlock = 1,
): StepPlan {
  const S = batch.items.length;
  let T = 0;
  let blockCount = 0;
  let penaltyCount = 0;
  let anyDraft = false;
  for (const { seq, start, numNew, draft } of batch.items) {
    const d = draft?.length ?? 0;
    if (d > 0) anyDraft = true;
    T += numNew + d;
    blockCount += Math.ceil((start + numNew + d) / blockSize) * pagesPerBlock;
    if (hasPenalty(seq.sampling)) penaltyCount += start + numNew;
  }
  const tokens = new Int32Array(T);
  const positions = new Int32Array(T);
  const seqTokenOffsets = new Int32Array(S + 1);
  const blockTableOffsets = new Int32Array(S + 1);
  const blockTables = new Int32Array(blockCount);
  const penaltyTokenOffsets = new Int32Array(S + 1);
  const penaltyTokens = new Int32Array(penaltyCount);
  const sample = new Uint8Array(S);
  const temperature = new Float32Array(S);
  const topK = new Int32Array(S);
  const topP = new Float32Array(S);
  const repetitionPenalty = new Float32Array(S);
  const presencePenalty = new Float32Array(S);
  const frequencyPenalty = new Float32Array(S);
  const seeds = new BigUint64Array(S);
  const sampleCounters = new Int32Array(S);
  const allowedMaskRows = new Int32Array(S).fill(-1);
  const topLogprobs = new Int32Array(S);
  const adapterSlots = new Int32Array(S);
  const draftCounts = new Int32Array(anyDraft ? S : 0);
  const prompt = promptScoreRows(batch, T);
  let anyAdapter = false;

  let t = 0;
  let b = 0;
  let p = 0;
  batch.items.forEach(({ seq, start, numNew, sample: doSample, draft }, s) => {
    for (let i = 0; i < numNew; i++, t++) {
      tokens[t] = seq.tokens[start + i];
      positions[t] = start + i;
    }
    // Draft tokens follow the known ones; the sampler verifies them (native/native.ts).
    const d = draft?.length ?? 0;
    for (let i = 0; i < d; i++, t++) {
      tokens[t] = draft![i];
      positions[t] = start + numNew + i;
    }
    if (anyDraft) draftCounts[s] = d;
    seqTokenOffsets[s + 1] = t;
    const nEntries = Math.ceil((start + numNew + d) / blockSize) * pagesPerBlock;
    if (seq.blockTable.length < nEntries) {
      throw new Error(
        `sequence ${seq.requestId}/${seq.index} has ${seq.blockTable.length} block-table entries, needs ${nEntries}`,
      );
    }
    // A page released outside a sliding window is never read (native attention starts at
    // the window); page 0 stands in for it so the table stays a valid list of page ids.
    for (let i = 0; i < nEntries; i++) blockTables[b++] = Math.max(0, seq.blockTable[i]);
    blockTableOffsets[s + 1] = b;
    const sp = seq.sampling;
    if (hasPenalty(sp)) for (let i = 0; i < start + numNew; i++) penaltyTokens[p++] = seq.tokens[i];
    penaltyTokenOffsets[s + 1] = p;
    sample[s] = doSample ? 1 : 0;
    temperature[s] = sp.temperature;
    topK[s] = sp.topK;
    topP[s] = sp.topP;
    repetitionPenalty[s] = sp.repetitionPenalty;
    presencePenalty[s] = sp.presencePenalty;
    frequencyPenalty[s] = sp.frequencyPenalty;
    seeds[s] = sp.seed;
    sampleCounters[s] = seq.numOutput;
    topLogprobs[s] = doSample ? sp.topLogprobs : -1;
    adapterSlots[s] = seq.adapterSlot;
    if (seq.adapterSlot >= 0) anyAdapter = true;
  });

  const suppressed = suppressedTokens(batch);
  const warpers = samplingWarpers(batch);
  const lateMaskRows = lateMasks ? lateRows(batch, allowedMaskRows) : 0;
  const allowedMask = lateMasks ? new Int32Array(0) : maskRows(batch, allowedMaskRows);

  const pairs: number[] = [];
  for (const c of batch.copies) c.src.forEach((src, k) => pairs.push(src, c.dst[k]));
  const copies = Int32Array.from(pairs);

  return {
    tokens,
    positions,
    seqTokenOffsets,
    blockTableOffsets,
    blockTables,
    ...(copies.length > 0 ? { blockCopies: copies } : {}),
    sample,
    temperature,
    topK,
    topP,
    repetitionPenalty,
    presencePenalty,
    frequencyPenalty,
    penaltyTokenOffsets,
    penaltyTokens,
    ...suppressed,
    ...warpers,
    seeds,
    sampleCounters,
    allowedMaskRows,
    allowedMask,
    ...(lateMaskRows > 0 ? { lateMaskRows } : {}),
    topLogprobs,
    ...(anyAdapter ? { adapterSlots } : {}),
    ...(anyDraft ? { draftCounts } : {}),
    ...prompt,
    ...placedEmbeddings(batch),
    ...bidirectionalSpans(batch),
  };
}

/**
 * The bidirectional spans (Gemma 3's images) that end within the positions each sequence
 * computes in this step, CSR by sequence; absent when no sequence of the step has any (every
 * decode step of a text model returns at the first check). A span that ended before the step
 * needs no mention: its K/V are in the cache, and later tokens see it causally.
 */
function bidirectionalSpans(batch: ScheduledBatch): Partial<StepPlan> {
  if (!batch.items.some(({ seq }) => seq.placed?.bidirectional)) return {};
  const chosen = batch.items.map(({ seq, start, numNew }) => {
    const spans = seq.placed?.bidirectional;
    const picked: number[] = [];
    if (spans)
      for (let k = 0; k < spans.length; k += 2)
        if (spans[k + 1] > start && spans[k + 1] <= start + numNew) picked.push(spans[k], spans[k + 1]);
    return picked;
  });
  if (chosen.every((c) => c.length === 0)) return {};
  const bidirectionalOffsets = new Int32Array(batch.items.length + 1);
  chosen.forEach((c, s) => (bidirectionalOffsets[s + 1] = bidirectionalOffsets[s] + c.length / 2));
  return { bidirectionalOffsets, bidirectionalSpans: Int32Array.from(chosen.flat()) };
}

/**
 * Placed rows (engine/vision/: an image's embeddings) of the prompt positions each sequence
 * computes in this step, CSR by sequence; absent when no sequence of the step has any.
 */
function placedEmbeddings(batch: ScheduledBatch): Partial<StepPlan> {
  // Every decode step passes here: a batch with no image rows allocates nothing.
  if (!batch.items.some(({ seq }) => seq.placed)) return {};
  const spans = batch.items.map(({ seq, start, numNew }) => {
    const p = seq.placed;
    if (!p) return null;
    const from = lowerBound(p.positions, start);
    const to = lowerBound(p.positions, start + numNew);
    return to > from ? { p, from, to } : null;
  });
  if (!spans.some((x) => x)) return {};
  const embedOffsets = new Int32Array(batch.items.length + 1);
  spans.forEach((x, s) => (embedOffsets[s + 1] = embedOffsets[s] + (x ? x.to - x.from : 0)));
  const n = embedOffsets[batch.items.length];
  const hidden = spans.find((x) => x)!.p.hidden;
  const embedPositions = new Int32Array(n);
  const embedRows = new Float32Array(n * hidden);
  spans.forEach((x, s) => {
    if (!x) return;
    embedPositions.set(x.p.positions.subarray(x.from, x.to), embedOffsets[s]);
    embedRows.set(x.p.rows.subarray(x.from * hidden, x.to * hidden), embedOffsets[s] * hidden);
  });
  return { embedOffsets, embedPositions, embedRows };
}

/** The first index of the increasing `a` whose value is >= v (a.length when none). */
function lowerBound(a: Int32Array, v: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Prompt logprobs (engine/prompt-logprobs/): each scored sequence's rows at prompt positions
 * p whose next token p+1 is still the prompt's are read at that token; the others are -1.
 * Absent when no sequence of the step asks.
 */
function promptScoreRows(
  batch: ScheduledBatch,
  T: number,
): { promptLogprobTargets?: Int32Array; promptTopLogprobs?: Int32Array } {
  if (!batch.items.some((i) => i.seq.promptScores)) return {};
  const targets = new Int32Array(T).fill(-1);
  const top = new Int32Array(batch.items.length);
  let t = 0;
  batch.items.forEach(({ seq, start, numNew, draft }, s) => {
    if (seq.promptScores) {
      top[s] = seq.promptScores.top;
      for (let i = 0; i < numNew; i++) {
        const next = start + i + 1;
        if (next < seq.promptLen) targets[t + i] = seq.tokens[next];
      }
    }
    t += numNew + (draft?.length ?? 0);
  });
  return { promptLogprobTargets: targets, promptTopLogprobs: top };
}

/**
 * Tokens a sequence that samples may not sample: before it has `minTokens` output tokens its
 * end tokens (end-of-sequence, stop ids), and what its bad_words ban after its output so far.
 * Absent when no sequence of the step needs it.
 */
function suppressedTokens(batch: ScheduledBatch): {
  suppressTokenOffsets?: Int32Array;
  suppressTokens?: Int32Array;
} {
  const held = ({ seq, sample }: ScheduledBatch['items'][number]): readonly number[] => {
    if (!sample) return [];
    const s = seq.sampling;
    const ends = seq.numOutput < (s.minTokens ?? 0) ? (s.endTokens ?? []) : [];
    if (!s.badWords) return ends;
    return [...ends, ...bannedTokens(s.badWords, seq.tokens, seq.promptLen)];
  };
  if (!batch.items.some((i) => held(i).length > 0)) return {};
  const suppressTokenOffsets = new Int32Array(batch.items.length + 1);
  const ids: number[] = [];
  batch.items.forEach((item, s) => {
    ids.push(...held(item));
    suppressTokenOffsets[s + 1] = ids.length;
  });
  return { suppressTokenOffsets, suppressTokens: Int32Array.from(ids) };
}

/**
 * logit_bias (CSR), min-p and typical-p of the sequences that sample; each field absent when no
 * sequence of the step uses it, so plans without them stay as they were.
 */
function samplingWarpers(batch: ScheduledBatch): Partial<StepPlan> {
  const items = batch.items;
  const out: {
    logitBiasOffsets?: Int32Array;
    logitBiasTokens?: Int32Array;
    logitBiasValues?: Float32Array;
    minP?: Float32Array;
    typicalP?: Float32Array;
  } = {};
  const bias = (i: (typeof items)[number]) => (i.sample ? i.seq.sampling.logitBias : undefined);
  if (items.some((i) => bias(i))) {
    const offsets = new Int32Array(items.length + 1);
    items.forEach((i, s) => (offsets[s + 1] = offsets[s] + (bias(i)?.tokens.length ?? 0)));
    const tokens = new Int32Array(offsets[items.length]);
    const values = new Float32Array(offsets[items.length]);
    items.forEach((i, s) => {
      const b = bias(i);
      if (!b) return;
      tokens.set(b.tokens, offsets[s]);
      values.set(b.values, offsets[s]);
    });
    Object.assign(out, { logitBiasOffsets: offsets, logitBiasTokens: tokens, logitBiasValues: values });
  }
  if (items.some((i) => (i.seq.sampling.minP ?? 0) > 0))
    out.minP = Float32Array.from(items, (i) => i.seq.sampling.minP ?? 0);
  if (items.some((i) => (i.seq.sampling.typicalP ?? 1) < 1))
    out.typicalP = Float32Array.from(items, (i) => i.seq.sampling.typicalP ?? 1);
  return out;
}

function hasPenalty(sp: {
  repetitionPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
}): boolean {
  return sp.repetitionPenalty !== 1 || sp.presencePenalty !== 0 || sp.frequencyPenalty !== 0;
}

/**
 * Structured output: the mask of each constrained sequence that samples this step, one row
 * each (the engine awaited them before building the plan). A sequence whose mask is missing
 * (its grammar failed) samples unconstrained; the engine fails it when the token comes back.
 */
function maskRows(batch: ScheduledBatch, rows: Int32Array): Int32Array {
  const masks: Int32Array[] = [];
  batch.items.forEach(({ seq, sample, draft }, s) => {
    const mask = seq.grammar?.mask;
    if (!sample || !mask || mask.length === 0) return;
    rows[s] = masks.length;
    masks.push(mask, ...draftMasks(seq, draft?.length ?? 0, mask.length));
  });
  if (masks.length === 0) return new Int32Array(0);
  const words = masks[0].length;
  const out = new Int32Array(masks.length * words);
  masks.forEach((m, i) => out.set(m, i * words));
  return out;
}

/**
 * Speculative decoding: the masks of a constrained sequence's verified positions after the
 * first (the state after each draft token: the grammar check computed them before the step).
 * A missing one (no check ran) allows every token: the sampler then never gets past the
 * first draft token the grammar refuses, since that position's own mask refuses it.
 */
function draftMasks(seq: Sequence, d: number, words: number): Int32Array[] {
  const out: Int32Array[] = [];
  for (let i = 0; i < d; i++) out.push(seq.draft?.masks?.[i] ?? new Int32Array(words).fill(-1));
  return out;
}

/** Late masks: rows for every constrained sequence that samples (1 + its draft tokens), in batch order. */
function lateRows(batch: ScheduledBatch, rows: Int32Array): number {
  let n = 0;
  batch.items.forEach(({ seq, sample, draft }, s) => {
    if (!sample || !seq.grammar) return;
    rows[s] = n;
    n += 1 + (draft?.length ?? 0);
  });
  return n;
}

/**
 * The matchers (and draft masks) behind the rows `lateRows` names, taken when the plan is
 * built (a request cancelled while the step runs lets go of its sequences' matchers; its rows
 * stay).
 */
export function lateMaskSources(batch: ScheduledBatch): { readonly mask: Int32Array | null }[] {
  const out: { readonly mask: Int32Array | null }[] = [];
  for (const { seq, sample, draft } of batch.items) {
    if (!sample || !seq.grammar) continue;
    out.push(seq.grammar);
    const d = draft?.length ?? 0;
    for (let i = 0; i < d; i++) out.push({ mask: seq.draft?.masks?.[i] ?? null });
  }
  return out;
}

/**
 * The late rows, filled once the masks are ready. A sequence without a mask (its grammar
 * failed, or has ended) gets an all-allowed row: it samples unconstrained, as in `maskRows`,
 * and the engine fails it when the token comes back.
 */
export function lateMaskBuffer(
  sources: readonly { readonly mask: Int32Array | null }[],
  words: number,
): Int32Array {
  const out = new Int32Array(sources.length * words);
  sources.forEach(({ mask: m }, i) => {
    if (m && m.length === words) out.set(m, i * words);
    else out.fill(-1, i * words, (i + 1) * words);
  });
  return out;
}

/**
 * The sampling fields of S greedy rows: argmax of each row's last logits, with no penalties,
 * mask, seed or logprobs. For plans built outside the scheduler (draft steps, benchmarks,
 * native tests, which override the fields they vary) whose rows need only the most likely token.
 */
export function greedySampling(S: number) {
  return {
    temperature: new Float32Array(S),
    topK: new Int32Array(S),
    topP: new Float32Array(S).fill(1),
    repetitionPenalty: new Float32Array(S).fill(1),
    presencePenalty: new Float32Array(S),
    frequencyPenalty: new Float32Array(S),
    penaltyTokenOffsets: new Int32Array(S + 1),
    penaltyTokens: new Int32Array(0),
    seeds: new BigUint64Array(S),
    sampleCounters: new Int32Array(S),
    allowedMaskRows: new Int32Array(S).fill(-1),
    allowedMask: new Int32Array(0),
    topLogprobs: new Int32Array(S).fill(-1),
  } satisfies Partial<StepPlan>;
}
