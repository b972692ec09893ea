/**
 * Defaults that depend on other fields. JSON Schema fills every missing field with a fixed
 * default; a fixed default can break a cross-field rule that the user's own values keep
 * (`"maxBatchSize": 64` alone would meet the default `maxN` 128 > 64). A field the user did
 * not write must never make a valid file invalid, so each such default is derived here from
 * the fields the user did write, before the cross-field rules run. The rules then only ever
 * fire on values that came from the file.
 *
 * Each derivation moves the unset field just far enough to keep its rule, starting from the
 * schema default: e.g. `maxN = min(128, maxBatchSize)`, `maxBatchSize = max(200, maxN, …)`.
 */
import type { PrismConfigFile } from './types.js';

/** Whether the user's file (after environment overrides) wrote the field at this path. */
export type WrittenBy = (path: readonly string[]) => boolean;

/** `WrittenBy` over the JSON as it was read, before the schema filled in defaults. */
export function writtenIn(raw: unknown): WrittenBy {
  return (path) => {
    let node: unknown = raw;
    for (const key of path) {
      if (typeof node !== 'object' || node === null || Array.isArray(node)) return false;
      if (!Object.prototype.hasOwnProperty.call(node, key)) return false;
      node = (node as Record<string, unknown>)[key];
    }
    return true;
  };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Adjusts, in place, the defaulted fields that a cross-field rule ties to a written one. */
export function applyDerivedDefaults(file: PrismConfigFile, written: WrittenBy): void {
  const s = file.BackendConfig.ScheduleConfig as Mutable<PrismConfigFile['BackendConfig']['ScheduleConfig']>;
  const d = file.BackendConfig.ModelDeployConfig as Mutable<
    PrismConfigFile['BackendConfig']['ModelDeployConfig']
  >;
  const sched = (f: string): boolean => written(['BackendConfig', 'ScheduleConfig', f]);
  const deploy = (f: string): boolean => written(['BackendConfig', 'ModelDeployConfig', f]);

  // Upper bounds first, raised to hold what the user asked for below them.
  // Rule: maxN, maxPrefillBatchSize, maxPreemptCount <= maxBatchSize.
  if (!sched('maxBatchSize')) {
    const below = [
      sched('maxN') ? s.maxN : 0,
      sched('maxPrefillBatchSize') ? s.maxPrefillBatchSize : 0,
      sched('maxPreemptCount') ? s.maxPreemptCount : 0,
    ];
    s.maxBatchSize = Math.max(s.maxBatchSize, ...below);
  }
  // Rule: maxIterTimes <= maxSeqLen.
  if (!deploy('maxSeqLen') && sched('maxIterTimes')) d.maxSeqLen = Math.max(d.maxSeqLen, s.maxIterTimes);

  // Then the fields bounded by them, lowered to fit.
  if (!sched('maxN')) s.maxN = Math.min(s.maxN, s.maxBatchSize);
  if (!sched('maxPrefillBatchSize')) s.maxPrefillBatchSize = Math.min(s.maxPrefillBatchSize, s.maxBatchSize);
  if (!sched('maxIterTimes')) s.maxIterTimes = Math.min(s.maxIterTimes, d.maxSeqLen);

  // Rule: maxPrefillTokens >= min(maxInputTokenLen, maxSeqLen - 1). Raise the prefill budget
  // to the user's input limit, or lower the default input limit to the user's prefill budget.
  const effectiveInput = Math.min(d.maxInputTokenLen, d.maxSeqLen - 1);
  if (!sched('maxPrefillTokens')) {
    s.maxPrefillTokens = Math.max(s.maxPrefillTokens, effectiveInput);
  } else if (!deploy('maxInputTokenLen')) {
    d.maxInputTokenLen = Math.min(d.maxInputTokenLen, s.maxPrefillTokens);
  }
}
