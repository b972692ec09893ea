/**
 * The --mmproj refusal tests both vision families run: loading `model()` with `mmproj: path()`
 * fails, the error's field `mmproj` and its message matching `rule`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadEngine } from '../../engine/load-engine.js';
import type { EngineOptions } from '../../engine/options.js';

/** One case: what the pairing is (in the test's name), the model, the mmproj path, the rule. */
export type MmprojRefusal = readonly [string, () => string, () => string, RegExp];

export function testMmprojRefusals(options: EngineOptions, cases: readonly MmprojRefusal[]): void {
  for (const [what, model, path, rule] of cases) {
    test(`--mmproj is refused at load for ${what}, naming mmproj`, async () => {
      await assert.rejects(
        loadEngine(model(), { ...options, mmproj: path() }),
        (e: Error & { field?: string }) => {
          assert.equal(e.field, 'mmproj');
          assert.match(e.message, rule);
          return true;
        },
      );
    });
  }
}
