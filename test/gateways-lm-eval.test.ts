/**
 * Evaluation harnesses get scores: lm-evaluation-harness itself (pinned in requirements-dev.in)
 * runs its `local-completions` model against the real server on a log-likelihood task of the
 * repository's own (test/lm-eval/: a task YAML and a local JSONL, nothing downloaded), and its
 * `hf` model on the same float weights in transformers; every request's log-likelihood and the
 * task's scores agree. Beside it, the response shapes harnesses and clients read: legacy
 * completions' `echo` with `logprobs` (the prompt first, its first token null, text offsets),
 * `max_tokens: 0`, vLLM's `prompt_logprobs` on completions and chat, TGI's
 * `decoder_input_details`, and the refusals. All on the generated qwen2-tied-f32 fixture
 * (F32 safetensors with the real Qwen tokenizer).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fixture } from './fixtures.js';
import { postJson, runPythonClient, startHarness, type Harness, type JsonBody } from './gateways-harness.js';

const NAME = 'prism-tiny';
const f = fixture('qwen2-tied-f32');
let h: Harness;
before(async () => {
  h = await startHarness(undefined, { modelPath: f.path, modelName: NAME, engine: { maxSeqLen: 512 } });
});
after(async () => {
  await h?.close();
});

test('lm-evaluation-harness: local-completions on Prism scores as its hf model on the same weights', async () => {
  const r = await runPythonClient('lm_eval_scores.py', [`${h.url}/v1/completions`, NAME, f.path], 300000);
  assert.equal(r.prism.loglikelihoods.length, 25, 'one request per choice of the 8 documents');
  assert.equal(r.hf.loglikelihoods.length, r.prism.loglikelihoods.length);
  // Relative to the log-likelihood's size: this random-weight model's continuations score tens
  // of nats (its logits spread wide), which Prism's F16 KV cache rounds as it rounds the logits.
  let worst = 0;
  let worstAbs = 0;
  r.prism.loglikelihoods.forEach((ll: number, i: number) => {
    const want = r.hf.loglikelihoods[i];
    worstAbs = Math.max(worstAbs, Math.abs(ll - want));
    worst = Math.max(worst, Math.abs(ll - want) / Math.max(1, Math.abs(want)));
  });
  console.log(
    `# lm-eval prism_tiny: acc ${r.prism.acc} / ${r.hf.acc}, acc_norm ${r.prism.acc_norm} / ${r.hf.acc_norm} ` +
      `(prism / hf), max |loglikelihood diff| ${worstAbs.toExponential(2)}, relative ${worst.toExponential(2)} ` +
      `over ${r.prism.loglikelihoods.length} requests`,
  );
  assert.ok(worst < 2e-4, `max |prism - hf| / max(1, |log-likelihood|) ${worst}`);
  assert.equal(r.prism.acc, r.hf.acc);
  assert.equal(r.prism.acc_norm, r.hf.acc_norm);
  assert.deepEqual(r.prism.greedy, r.hf.greedy);
});

const completions = (body: object) => postJson(`${h.url}/v1/completions`, { model: NAME, ...body });

test('completions: echo with logprobs gives the prompt first; max_tokens 0 scores the prompt alone', async () => {
  const prompt = 'The capital of France is';
  const r = await completions({ prompt, echo: true, logprobs: 2, max_tokens: 2, temperature: 0 });
  assert.equal(r.status, 200, r.text);
  const c = r.json.choices[0];
  const lp = c.logprobs;
  const promptLen = r.json.usage.prompt_tokens;
  assert.equal(lp.tokens.length, promptLen + 2);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x: unknown) => typeof x === 'number' && x <= 0));
  // Each prompt token's alternatives hold the token itself and the two most likely.
  for (let i = 1; i < promptLen; i++) {
    const top = lp.top_logprobs[i];
    assert.equal(top[lp.tokens[i]], lp.token_logprobs[i]);
    assert.ok(Object.keys(top).length >= 2 && Object.keys(top).length <= 3);
  }
  assert.equal(lp.tokens.slice(0, promptLen).join(''), prompt);
  assert.deepEqual(lp.text_offset.slice(0, 3), [
    0,
    lp.tokens[0].length,
    lp.tokens[0].length + lp.tokens[1].length,
  ]);
  assert.equal(lp.text_offset[promptLen], prompt.length);
  assert.ok(c.text.startsWith(prompt));

  const scored = await completions({ prompt, echo: true, logprobs: 0, max_tokens: 0 });
  assert.equal(scored.status, 200, scored.text);
  const s = scored.json.choices[0];
  assert.equal(s.finish_reason, 'length');
  assert.equal(s.text, prompt);
  assert.equal(scored.json.usage.completion_tokens, 0);
  assert.deepEqual(s.logprobs.token_logprobs, lp.token_logprobs.slice(0, promptLen));
});

function checkVllmShape(list: JsonBody, promptTokens: number, top: number): void {
  assert.equal(list.length, promptTokens);
  assert.equal(list[0], null);
  for (const entry of list.slice(1)) {
    const values = Object.values(entry) as { logprob: number; rank: number; decoded_token: string }[];
    assert.ok(values.length >= top && values.length <= top + 1);
    for (const v of values) assert.ok(v.logprob <= 0 && v.rank >= 1 && typeof v.decoded_token === 'string');
  }
}

test("vLLM's prompt_logprobs on completions (per choice) and chat (per response)", async () => {
  const r = await completions({ prompt: 'Bees make honey', max_tokens: 1, prompt_logprobs: 2 });
  assert.equal(r.status, 200, r.text);
  checkVllmShape(r.json.choices[0].prompt_logprobs, r.json.usage.prompt_tokens, 2);
  const chat = await postJson(`${h.url}/v1/chat/completions`, {
    model: NAME,
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 1,
    prompt_logprobs: 1,
  });
  assert.equal(chat.status, 200, chat.text);
  checkVllmShape(chat.json.prompt_logprobs, chat.json.usage.prompt_tokens, 1);
});

test("TGI's decoder_input_details fills details.prefill with the prompt's logprobs", async () => {
  const r = await postJson(`${h.url}/generate`, {
    inputs: 'Bees make honey',
    parameters: { max_new_tokens: 1, details: true, decoder_input_details: true },
  });
  assert.equal(r.status, 200, r.text);
  const prefill = r.json.details.prefill;
  assert.equal(prefill.length, r.json.details.prompt_tokens);
  assert.equal(prefill[0].logprob, null);
  assert.ok(prefill.slice(1).every((t: JsonBody) => typeof t.logprob === 'number' && t.logprob <= 0));
  const stream = await postJson(`${h.url}/generate_stream`, {
    inputs: 'Bees',
    parameters: { details: true, decoder_input_details: true },
  });
  assert.equal(stream.status, 422);
  assert.match(stream.json.error, /decoder_input_details/);
});

test('refusals name their field', async () => {
  const zero = await completions({ prompt: 'x', max_tokens: 0 });
  assert.equal(zero.status, 400);
  assert.equal(zero.json.error.param, 'max_tokens');
  const streamed = await completions({ prompt: 'x', echo: true, logprobs: 1, stream: true });
  assert.equal(streamed.status, 400);
  assert.equal(streamed.json.error.param, 'echo');
  const tooMany = await completions({ prompt: 'x', prompt_logprobs: 21 });
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.text, /prompt_logprobs/);
});
