/**
 * Trained adapters end to end (issue 11, 6d): two LoRA adapters trained with `peft` on the
 * default model (scripts/train-adapters.py: one answers in French, one in capital letters)
 * are served by a started Prism server, and the OpenAI SDK, naming each by `model`, gets
 * answers in the trained style for countries the training never saw, while the base model
 * (by its own name) answers in neither.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL_NAME, startHarness, type Harness } from './gateways-harness.js';
import { ensureTrainedAdapters, type TrainedAdapters } from './trained-adapters.js';

let h: Harness;
let trained: TrainedAdapters;

before(async () => {
  trained = ensureTrainedAdapters();
  h = await startHarness(undefined, {
    lora: {
      maxLoras: 2,
      maxLoraRank: 8,
      modules: [
        { name: 'fr', path: trained.paths.fr },
        { name: 'caps', path: trained.paths.caps },
      ],
    },
  });
});
after(async () => {
  await h?.close();
});

const french = (s: string) => /\bLa capitale (de|du|des)\b/.test(s);
function upperShare(s: string): number {
  const letters = s.replace(/[^A-Za-z]/g, '');
  return letters.length === 0 ? 0 : letters.replace(/[a-z]/g, '').length / letters.length;
}

test('each trained adapter answers in its style through the OpenAI SDK; the base model does not', async () => {
  const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'none' });
  const ask = async (model: string, prompt: string) =>
    (await sdk.completions.create({ model, prompt, max_tokens: 16, temperature: 0, stop: ['\n'] }))
      .choices[0]!.text;
  assert.ok(trained.heldOut.length >= 3);
  for (const prompt of trained.heldOut) {
    const [base, fr, caps] = await Promise.all([
      ask(MODEL_NAME, prompt),
      ask('fr', prompt),
      ask('caps', prompt),
    ]);
    const where = `${JSON.stringify(prompt)}: base ${JSON.stringify(base)}, fr ${JSON.stringify(fr)}, caps ${JSON.stringify(caps)}`;
    assert.ok(french(fr), `fr answers in French: ${where}`);
    assert.ok(upperShare(caps) > 0.9 && /[A-Z]{3}/.test(caps), `caps answers in capitals: ${where}`);
    assert.ok(!french(base) && upperShare(base) < 0.5, `the base model does neither: ${where}`);
  }
});
