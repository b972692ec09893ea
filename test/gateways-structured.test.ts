/**
 * Structured output through every API family on the real server (default model, engine over
 * gRPC): OpenAI chat and completions `response_format` (with the OpenAI SDK), vLLM's
 * `structured_outputs` / `guided_*` fields, TGI `parameters.grammar`, vLLM `/generate`, native
 * `/infer` and KServe `generate`; streaming deltas that concatenate to the document; n > 1;
 * and the invalid inputs, each a 4xx naming the field and the rule.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';
import { postSse } from './gateways-sse.js';

let h: Harness;
let client: OpenAI;

before(async () => {
  h = await startHarness();
  client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
});
after(async () => {
  await h?.close();
});

const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 16 }, age: { type: 'integer' } },
  required: ['name', 'age'],
};
const valid = (doc: string, schema: object = person) => {
  const value: unknown = JSON.parse(doc);
  assert.ok(new Ajv2020().validate(schema, value), doc);
  return value as Record<string, unknown>;
};
const messages = [{ role: 'user' as const, content: 'Give me a person as JSON.' }];

describe('OpenAI', () => {
  test('chat json_schema: the reply validates; additionalProperties false by default', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_NAME,
      messages,
      max_tokens: 60,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.deepEqual(Object.keys(valid(r.choices[0].message.content!)).sort(), ['age', 'name']);
  });

  test('chat json_object and json_schema without a schema: any JSON object', async () => {
    for (const response_format of [
      { type: 'json_object' as const },
      { type: 'json_schema' as const, json_schema: { name: 'anything' } },
    ]) {
      const r = await client.chat.completions.create({
        model: MODEL_NAME,
        messages,
        max_tokens: 60,
        temperature: 0,
        response_format,
      });
      const c = r.choices[0];
      if (c.finish_reason === 'length') continue; // a document cut by max_tokens
      const v: unknown = JSON.parse(c.message.content!);
      assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v));
    }
  });

  test('chat streaming with n = 2: each choice`s deltas concatenate to a valid document', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL_NAME,
      messages,
      max_tokens: 60,
      temperature: 0.8,
      seed: 7,
      n: 2,
      stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person } },
    });
    const texts = ['', ''];
    const reasons: (string | null)[] = [null, null];
    for await (const chunk of stream)
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        if (c.finish_reason) reasons[c.index] = c.finish_reason;
      }
    for (let i = 0; i < 2; i++) {
      assert.equal(reasons[i], 'stop');
      valid(texts[i]);
    }
  });

  test('completions response_format and the vLLM extension fields', async () => {
    const base = { model: MODEL_NAME, prompt: 'Answer:', max_tokens: 12, temperature: 0 };
    const r = await postJson(`${h.url}/v1/completions`, {
      ...base,
      max_tokens: 60,
      response_format: { type: 'json_schema', json_schema: { name: 'p', schema: person } },
    });
    assert.equal(r.status, 200, r.text);
    valid(r.json.choices[0].text);
    const cases: [object, RegExp][] = [
      [{ guided_choice: ['yes', 'no'] }, /^(yes|no)$/],
      [{ guided_regex: '[0-9]{4}' }, /^[0-9]{4}$/],
      [{ guided_grammar: 'root ::= "A" [0-9] [0-9]' }, /^A[0-9]{2}$/],
      [{ structured_outputs: { choice: ['left', 'right'] } }, /^(left|right)$/],
      [{ structured_outputs: { regex: 'x{1,3}y' } }, /^x{1,3}y$/],
    ];
    for (const [fields, re] of cases) {
      const c = await postJson(`${h.url}/v1/chat/completions`, { ...base, messages, ...fields });
      assert.equal(c.status, 200, c.text);
      assert.match(c.json.choices[0].message.content, re, JSON.stringify(fields));
    }
    const gj = await postJson(`${h.url}/v1/completions`, { ...base, max_tokens: 60, guided_json: person });
    assert.equal(gj.status, 200, gj.text);
    valid(gj.json.choices[0].text);
    const sj = await postJson(`${h.url}/v1/completions`, {
      ...base,
      max_tokens: 60,
      structured_outputs: { json: JSON.stringify(person) },
    });
    valid(sj.json.choices[0].text);
  });

  test('max_tokens cuts the document: finish_reason length', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_NAME,
      messages,
      max_tokens: 3,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person } },
    });
    assert.equal(r.choices[0].finish_reason, 'length');
  });

  test('invalid input: 400 naming the field and the rule', async () => {
    const post = (body: object) =>
      postJson(`${h.url}/v1/chat/completions`, { model: MODEL_NAME, messages, max_tokens: 5, ...body });
    const rf = (response_format: object) => post({ response_format });
    const cases: [Promise<Awaited<ReturnType<typeof post>>>, RegExp][] = [
      [
        rf({ type: 'json_schema', json_schema: { schema: person } }),
        /response_format\.json_schema\.name: is required/,
      ],
      [rf({ type: 'json_schema', json_schema: { name: '' } }), /response_format\.json_schema\.name/],
      [rf({ type: 'json_schema', json_schema: { name: 'a b' } }), /name: must be an identifier/],
      [rf({ type: 'json_schema' }), /response_format\.json_schema: is required/],
      [rf({ type: 'xml' }), /response_format\.type: unknown type "xml"/],
      [
        rf({ type: 'json_schema', json_schema: { name: 'n', schema: { type: 'objekt' } } }),
        /response_format\.json_schema\.schema/,
      ],
      [
        // strict: true refuses what the grammar alone cannot enforce (otherwise it is checked).
        rf({
          type: 'json_schema',
          json_schema: { name: 'n', strict: true, schema: { type: 'array', uniqueItems: true } },
        }),
        /schema\.uniqueItems: keyword 'uniqueItems' is not supported/,
      ],
      [post({ guided_regex: '(unclosed' }), /guided_regex: the grammar does not compile/],
      [post({ guided_choice: [] }), /guided_choice: must be a non-empty array/],
      [
        post({ guided_regex: 'a', guided_choice: ['b'] }),
        /guided_choice: cannot be combined with guided_regex/,
      ],
      [
        post({ structured_outputs: { structural_tag: '{}' } }),
        /structured_outputs\.structural_tag: is not supported/,
      ],
    ];
    for (const [p, re] of cases) {
      const r = await p;
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error.message, re);
    }
  });

  test('recursive schemas: never a 500; a merge that recurses is checked on the document (400 naming the path under strict); plain recursion works', async () => {
    // Issue 21's patterns: a keyword beside anyOf whose branch refers back to its definition.
    const node = {
      definitions: {
        node: {
          type: 'object',
          additionalProperties: {
            minProperties: 1,
            anyOf: [{ type: 'string' }, { $ref: '#/definitions/node' }],
          },
        },
      },
      $ref: '#/definitions/node',
    };
    // Nested far past the limit, sent as text (the client's own JSON.stringify would overflow).
    const levels = 5000;
    const deep = `${'{"type":"array","items":'.repeat(levels)}{"type":"string"}${'}'.repeat(levels)}`;
    const cases: [string, string, RegExp][] = [
      [
        '/v1/chat/completions',
        JSON.stringify({
          messages,
          response_format: { type: 'json_schema', json_schema: { name: 'n', strict: true, schema: node } },
        }),
        /^response_format\.json_schema\.schema\.definitions\.node\.additionalProperties\.anyOf\[1\]\..*: refers back to "#\/definitions\/node" through a merge/,
      ],
      [
        '/v1/chat/completions',
        `{"messages":${JSON.stringify(messages)},"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":${deep}}}}`,
        // The gateway's own body limit (ServerConfig.limits.maxJsonDepth) or the schema's.
        /^response_format\.json_schema\.schema(\.items)+: (is )?nested (too )?deep/,
      ],
    ];
    for (const [path, body, re] of cases) {
      const r = await postJson(
        `${h.url}${path}`,
        `{"model":${JSON.stringify(MODEL_NAME)},"max_tokens":5,${body.slice(1)}`,
      );
      assert.equal(r.status, 400, r.text.slice(0, 300));
      assert.match(r.json.error.message, re);
    }
    // Without strict the merge is left to the document check: the request runs (cut here).
    const vllm = await postJson(`${h.url}/v1/completions`, {
      model: MODEL_NAME,
      prompt: 'x',
      max_tokens: 5,
      guided_json: node,
    });
    assert.equal(vllm.status, 200, vllm.text);
    const tgi = await postJson(`${h.url}/generate`, {
      inputs: 'x',
      parameters: { max_new_tokens: 5, grammar: { type: 'json', value: node } },
    });
    assert.equal(tgi.status, 200, tgi.text);
    // `items: {allOf: [{$ref: menuItem}]}` inside menuItem stays a recursive reference: it runs.
    const menu = {
      type: 'object',
      properties: { menu: { type: 'array', items: { $ref: '#/definitions/menuItem' }, maxItems: 2 } },
      required: ['menu'],
      definitions: {
        menuItem: {
          type: 'object',
          properties: {
            label: { type: 'string', maxLength: 8 },
            items: { type: 'array', maxItems: 1, items: { allOf: [{ $ref: '#/definitions/menuItem' }] } },
          },
          required: ['label'],
        },
      },
    };
    const r = await postJson(`${h.url}/v1/chat/completions`, {
      model: MODEL_NAME,
      messages,
      max_tokens: 80,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'menu', schema: menu } },
    });
    assert.equal(r.status, 200, r.text);
    if (r.json.choices[0].finish_reason === 'stop') valid(r.json.choices[0].message.content, menu);
  });
});

describe('TGI, vLLM /generate, native /infer, KServe generate', () => {
  test('TGI parameters.grammar json and regex, plain and streaming', async () => {
    const r = await postJson(`${h.url}/generate`, {
      inputs: 'A person as JSON:',
      parameters: { max_new_tokens: 60, grammar: { type: 'json', value: person } },
    });
    assert.equal(r.status, 200, r.text);
    valid(r.json.generated_text);
    const re = await postJson(`${h.url}/generate`, {
      inputs: 'Code:',
      parameters: { max_new_tokens: 10, grammar: { type: 'regex', value: '[A-Z]{3}' } },
    });
    assert.match(re.json.generated_text, /^[A-Z]{3}$/);
    const s = await postSse(`${h.url}/generate_stream`, {
      inputs: 'A person as JSON:',
      parameters: { max_new_tokens: 60, grammar: { type: 'json', value: person } },
    });
    const frames = s.events.map(
      (e) =>
        JSON.parse(e.data) as { token: { text: string; special: boolean }; generated_text: string | null },
    );
    const joined = frames.map((f) => (f.token.special ? '' : f.token.text)).join('');
    const last = frames[frames.length - 1].generated_text!;
    valid(last);
    assert.equal(joined, last);
    const bad = await postJson(`${h.url}/generate`, {
      inputs: 'x',
      parameters: { grammar: { type: 'yaml', value: 'a' } },
    });
    assert.equal(bad.status, 422);
    assert.match(bad.json.error, /parameters\.grammar\.type: unknown type "yaml"/);
    const badRe = await postJson(`${h.url}/generate`, {
      inputs: 'x',
      parameters: { grammar: { type: 'regex', value: '[a-' } },
    });
    assert.equal(badRe.status, 422);
    assert.match(badRe.json.error, /parameters\.grammar\.value: the grammar does not compile/);
  });

  test('vLLM /generate, native /infer and KServe generate take the guided fields', async () => {
    const v = await postJson(`${h.url}/generate`, {
      prompt: 'Pick:',
      max_tokens: 8,
      n: 2,
      temperature: 1,
      seed: 1,
      guided_choice: ['cat', 'dog'],
    });
    assert.equal(v.status, 200, v.text);
    assert.equal(v.json.text.length, 2);
    for (const t of v.json.text as string[]) assert.match(t, /^Pick:(cat|dog)$/);
    const n = await postJson(`${h.url}/infer`, {
      inputs: 'A person as JSON:',
      parameters: { max_new_tokens: 60, guided_json: person },
    });
    assert.equal(n.status, 200, n.text);
    valid(n.json.generated_text);
    const k = await postJson(`${h.url}/v2/models/${MODEL_NAME}/generate`, {
      text_input: 'Digits:',
      parameters: { max_new_tokens: 8, structured_outputs: { regex: '[0-9]{5}' } },
    });
    assert.equal(k.status, 200, k.text);
    assert.match(k.json.text_output, /^[0-9]{5}$/);
    const kb = await postJson(`${h.url}/v2/models/${MODEL_NAME}/generate`, {
      text_input: 'x',
      parameters: { guided_json: { type: 'object', minProperties: -1 } },
    });
    assert.ok(kb.status >= 400 && kb.status < 500, kb.text);
    assert.match(kb.text, /parameters\.guided_json\.minProperties: is not valid JSON Schema/);
  });
});
