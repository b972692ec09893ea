/**
 * The engine over real gRPC with the real default model (SmolLM2-135M-Instruct): the
 * server in engine/service/server.ts in front of the in-process engine core, the client in
 * engine/service/client.ts (and raw grpc-js calls where the client would hide the wire).
 *
 * Small KV blocks (16 tokens) keep the prefix-cache prompts short; greedy decoding makes
 * "same text" comparisons exact.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import * as pb from '../gen/prism/engine/v1/engine.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { EngineError } from '../engine/errors.js';
import { loadEngine } from '../engine/load-engine.js';
import { connectEngine, type GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer, type RunningEngineServer } from '../engine/service/server.js';
import type { Engine, FinishEvent, GenerateEvent, GenerateRequest, SamplingParams } from '../engine/types.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const BLOCK = 16;
const MAX_INPUT = 256;

let engine: Engine;
let server: RunningEngineServer;
let tcpServer: RunningEngineServer;
let client: GrpcEngineClient;
let dir: string;

interface ReflectionResponse {
  readonly listServicesResponse?: { readonly service: { readonly name: string }[] };
  readonly fileDescriptorResponse?: { readonly fileDescriptorProto: Buffer[] };
}

interface Collected {
  readonly texts: string[];
  readonly ids: number[][];
  readonly finishes: FinishEvent[];
}

async function collect(events: AsyncIterable<GenerateEvent>): Promise<Collected> {
  const texts: string[] = [];
  const ids: number[][] = [];
  const finishes: FinishEvent[] = [];
  for await (const e of events) {
    if (e.type === 'token') {
      texts[e.index] = (texts[e.index] ?? '') + e.text;
      ids[e.index] = [...(ids[e.index] ?? []), ...e.tokenIds];
    } else {
      finishes[e.index] = e;
    }
  }
  return { texts, ids, finishes };
}

function greedy(text: string, params: SamplingParams = {}, requestId?: string): GenerateRequest {
  return {
    prompt: { kind: 'text', text },
    params: { temperature: 0, maxNewTokens: 12, ignoreEos: true, ...params },
    ...(requestId !== undefined ? { requestId } : {}),
  };
}

/** Polls Status until `ok` holds (the engine frees blocks within a step, not synchronously). */
async function waitForStatus(
  ok: (s: Awaited<ReturnType<Engine['status']>>) => boolean,
  what: string,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  let last;
  while (Date.now() < deadline) {
    last = await client.status();
    if (ok(last)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(
    `timed out waiting for ${what}; last status: running ${last?.running}, waiting ${last?.waiting}, free ${last?.freeBlocks}/${last?.totalBlocks}`,
  );
}

/** A raw unary call, to see the gRPC status code itself rather than the mapped EngineError. */
function rawUnary(address: string, method: string, body: Buffer): Promise<grpc.ServiceError | null> {
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      method,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      (err) => {
        raw.close();
        resolve(err);
      },
    );
  });
}

const spans = new InMemorySpanExporter();

before(async () => {
  // A tracer provider as \`prism serve\` installs one, to see the engine's server spans.
  new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).register();
  dir = mkdtempSync(join(tmpdir(), 'prism-grpc-'));
  engine = await loadEngine(ensureDefaultModel(), {
    cacheBlockSize: BLOCK,
    kvBlocks: 256,
    maxSeqLen: 512,
    maxInputTokenLen: MAX_INPUT,
    maxPrefillTokens: 512,
    maxBatchSize: 16,
    prefixCache: true,
  });
  server = await startEngineServer(engine, { listen: `unix:${join(dir, 'engine.sock')}` });
  tcpServer = await startEngineServer(engine, { listen: '127.0.0.1:0' });
  client = connectEngine(server.address);
});

after(async () => {
  await client?.close();
  tcpServer?.server.forceShutdown();
  await server?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe('service basics', () => {
  test('listens on unix:PATH and on HOST:PORT', () => {
    assert.match(server.address, /^unix:.*engine\.sock$/);
    assert.match(tcpServer.address, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(tcpServer.address, '127.0.0.1:0');
  });

  test('health check answers SERVING for the server and the engine service', async () => {
    const def = protoLoader.loadSync(healthProtoPath, { enums: String });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    const health = new pkg.grpc.health.v1.Health(
      tcpServer.address,
      grpc.credentials.createInsecure(),
    ) as unknown as grpc.Client & {
      check(
        req: { service: string },
        cb: (err: grpc.ServiceError | null, res?: { status: string }) => void,
      ): void;
    };
    const check = (service: string) =>
      new Promise<{ err: grpc.ServiceError | null; status?: string }>((resolve) =>
        health.check({ service }, (err: grpc.ServiceError | null, res?: { status: string }) =>
          resolve({ err, status: res?.status }),
        ),
      );
    assert.equal((await check('')).status, 'SERVING');
    assert.equal((await check('prism.engine.v1.Engine')).status, 'SERVING');
    assert.equal((await check('no.such.Service')).err?.code, grpc.status.NOT_FOUND);
    health.close();
  });

  test('reflection lists the engine and health services and describes the engine', async () => {
    const require = createRequire(import.meta.url);
    const reflectionProto = join(
      dirname(require.resolve('@grpc/reflection/package.json')),
      'build/proto/grpc/reflection/v1/reflection.proto',
    );
    const def = protoLoader.loadSync(reflectionProto);
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
    };
    const r = new pkg.grpc.reflection.v1.ServerReflection(
      tcpServer.address,
      grpc.credentials.createInsecure(),
    ) as unknown as grpc.Client & {
      serverReflectionInfo(): grpc.ClientDuplexStream<object, ReflectionResponse>;
    };
    const ask = (request: object) =>
      new Promise<ReflectionResponse>((resolve, reject) => {
        const call = r.serverReflectionInfo();
        call.on('data', (msg: ReflectionResponse) => {
          resolve(msg);
          call.end();
        });
        call.on('error', reject);
        call.write(request);
      });
    const list = await ask({ listServices: '' });
    const names = (list.listServicesResponse?.service ?? []).map((s) => s.name);
    assert.ok(names.includes('prism.engine.v1.Engine'), names.join(', '));
    assert.ok(names.includes('grpc.health.v1.Health'), names.join(', '));
    const file = await ask({ fileContainingSymbol: 'prism.engine.v1.Engine' });
    const descriptors = file.fileDescriptorResponse?.fileDescriptorProto ?? [];
    assert.ok(descriptors.length > 0);
    assert.ok(descriptors.some((d) => d.toString('latin1').includes('GenerateStream')));
    r.close();
  });

  test('Info, ListModels, Tokenize, Detokenize, ApplyChatTemplate', async () => {
    const info = await client.info();
    assert.equal(info.architecture, 'llama');
    assert.equal(info.blockSize, BLOCK);
    assert.equal(info.prefixCache, true);
    assert.equal(info.maxInputTokenLen, MAX_INPUT);
    const models = await client.listModels();
    assert.deepEqual(
      models.map((m) => m.id),
      [info.modelName],
    );
    const ids = await client.tokenize('Hello, world!', false);
    assert.ok(ids.length >= 3 && ids.length <= 6, `ids ${ids}`);
    const back = await client.detokenize(ids);
    assert.equal(back.text, 'Hello, world!');
    assert.equal(back.tokens.join(''), 'Hello, world!');
    const chat = await client.applyChatTemplate([{ role: 'user', content: 'What is 2+2?' }]);
    assert.match(chat, /What is 2\+2\?/);
    assert.match(chat, /assistant/);
  });
});

describe('generation over gRPC', () => {
  test('concurrent greedy streams give the same tokens as the same prompts one by one', async () => {
    const prompts = [
      'The capital of France is',
      'Once upon a time, in a small village,',
      'def fibonacci(n):',
      'The three primary colors are',
      'Water boils at',
      'My favourite fruit is',
      'In 1969, astronauts',
      'The quick brown fox',
    ];
    const alone: Collected[] = [];
    for (const p of prompts) alone.push(await collect(client.generate(greedy(p))));
    const together = await Promise.all(prompts.map((p) => collect(client.generate(greedy(p)))));
    for (let i = 0; i < prompts.length; i++) {
      assert.deepEqual(together[i].ids[0], alone[i].ids[0], `prompt ${i}: '${prompts[i]}'`);
      assert.equal(together[i].texts[0], alone[i].texts[0]);
      assert.equal(
        together[i].finishes[0].text,
        alone[i].texts[0],
        'streamed deltas add up to the final text',
      );
      assert.equal(alone[i].finishes[0].reason, 'length');
      assert.equal(alone[i].finishes[0].usage.completionTokens, 12);
    }
  });

  test('a prefix-cached request gives the same tokens as the cold one', async () => {
    const prompt =
      'Prism test ' +
      Date.now() +
      ': a long shared preamble about the history of computing, from the abacus ' +
      'and mechanical calculators to vacuum tubes, transistors, integrated circuits and the microprocessor, ' +
      'which together made personal computers possible. Question: what came after the transistor?';
    const cold = await collect(client.generate(greedy(prompt, { maxNewTokens: 16 })));
    const warm = await collect(client.generate(greedy(prompt, { maxNewTokens: 16 })));
    const promptTokens = cold.finishes[0].usage.promptTokens;
    assert.ok(promptTokens > 3 * BLOCK, `prompt is ${promptTokens} tokens`);
    assert.equal(cold.finishes[0].usage.cachedPromptTokens, 0);
    const cached = warm.finishes[0].usage.cachedPromptTokens;
    assert.ok(
      cached > 0 && cached % BLOCK === 0 && cached < promptTokens,
      `cached ${cached} of ${promptTokens}`,
    );
    assert.equal(
      cached,
      Math.floor((promptTokens - 1) / BLOCK) * BLOCK,
      'whole blocks, last prompt token recomputed',
    );
    assert.deepEqual(warm.ids[0], cold.ids[0]);
    assert.equal(warm.finishes[0].text, cold.finishes[0].text);
    const st = await client.status();
    assert.ok(st.prefixCacheHits >= cached);
  });

  test('the same seed gives the same sampled text alone and in a busy batch', async () => {
    const sampled = (seed: number): GenerateRequest => ({
      prompt: { kind: 'text', text: 'Write a short poem about the sea:' },
      params: { temperature: 0.9, topP: 0.95, topK: 50, seed, maxNewTokens: 20, ignoreEos: true },
    });
    const alone = await collect(client.generate(sampled(4242)));
    assert.equal(alone.finishes[0].seed, 4242);
    const busy = await Promise.all([
      collect(client.generate(sampled(4242))),
      ...[1, 2, 3, 4, 5].map((s) => collect(client.generate(sampled(s)))),
      collect(client.generate(greedy('Tell me about the mountains', { maxNewTokens: 24 }))),
    ]);
    assert.deepEqual(busy[0].ids[0], alone.ids[0]);
    assert.equal(busy[0].texts[0], alone.texts[0]);
    // Different seeds really sample differently (the test would be vacuous otherwise).
    assert.ok(busy.slice(1, 6).some((c) => c.texts[0] !== alone.texts[0]));
  });

  test('unary Generate returns every choice, with logprobs when asked', async () => {
    const res = await client.generateAll({
      prompt: { kind: 'chat', messages: [{ role: 'user', content: 'Say hello.' }] },
      params: {
        temperature: 0.7,
        seed: 7,
        n: 2,
        maxNewTokens: 6,
        ignoreEos: true,
        logprobs: true,
        topLogprobs: 2,
      },
    });
    assert.equal(res.choices.length, 2);
    assert.deepEqual(
      res.choices.map((c) => c.index),
      [0, 1],
    );
    for (const c of res.choices) {
      assert.equal(c.tokenIds.length, 6);
      assert.equal(c.logprobs.length, 6);
      assert.equal(c.logprobs[0].top.length, 2);
      assert.ok(c.logprobs.every((l) => l.logprob <= 0));
      assert.equal(c.requestId, res.requestId);
    }
  });
});

describe('tracing', () => {
  test("the engine's server span continues the caller's traceparent", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const traced = connectEngine(server.address, {
      metadata: () => ({ traceparent: `00-${traceId}-${parentId}-01` }),
    });
    await collect(traced.generate(greedy('Trace me', { maxNewTokens: 3 })));
    await traced.generateAll(greedy('Trace me too', { maxNewTokens: 2 }));
    await traced.close();
    const mine = spans.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const rpcs = mine.filter((s) => s.name.startsWith('prism.engine.v1.Engine/'));
    assert.deepEqual(rpcs.map((s) => s.name).sort(), [
      'prism.engine.v1.Engine/Generate',
      'prism.engine.v1.Engine/GenerateStream',
    ]);
    for (const s of rpcs) {
      assert.equal(s.parentSpanContext?.spanId, parentId);
      assert.equal(s.attributes['gen_ai.response.finish_reasons'], 'length');
      assert.ok(Number(s.attributes['gen_ai.usage.input_tokens']) > 0);
      // The engine's own phase spans hang under each RPC span, once each.
      const phases = mine.filter((p) => p.parentSpanContext?.spanId === s.spanContext().spanId);
      assert.deepEqual(
        phases.map((p) => p.name),
        ['prism.queue', 'prism.prefill', 'prism.decode'],
      );
    }
    assert.equal(
      rpcs.find((s) => s.name.endsWith('GenerateStream'))?.attributes['gen_ai.usage.output_tokens'],
      3,
    );
  });
});

describe('cancellation frees blocks', () => {
  test('the Cancel RPC stops a live request and its blocks return', async () => {
    await waitForStatus((s) => s.running === 0 && s.waiting === 0, 'an idle engine');
    const idle = await client.status();
    const id = `cancel-${Date.now()}`;
    const events: GenerateEvent[] = [];
    let cancelled: boolean | undefined;
    for await (const e of client.generate(
      greedy('Count from one to one thousand: one, two,', { maxNewTokens: 400 }, id),
    )) {
      events.push(e);
      if (cancelled === undefined && e.type === 'token') {
        const busy = await client.status();
        assert.ok(busy.freeBlocks < idle.freeBlocks, 'the running request holds blocks');
        cancelled = await client.cancel(id);
      }
    }
    assert.equal(cancelled, true);
    const finish = events.at(-1);
    assert.equal(finish?.type, 'finish');
    assert.equal((finish as FinishEvent).reason, 'cancelled');
    assert.ok((finish as FinishEvent).tokenIds.length < 400);
    await waitForStatus((s) => s.running === 0 && s.freeBlocks === idle.freeBlocks, 'the blocks to return');
    assert.equal(await client.cancel(id), false, 'no longer live');
  });

  test('a client that cancels its call frees the blocks', async () => {
    const idle = await client.status();
    const abort = new AbortController();
    await assert.rejects(
      (async () => {
        for await (const e of client.generate(
          greedy('List every prime number:', { maxNewTokens: 400 }),
          abort.signal,
        )) {
          if (e.type === 'token') abort.abort();
        }
      })(),
      (e: unknown) => e instanceof EngineError && e.code === 'CANCELLED',
    );
    await waitForStatus((s) => s.running === 0 && s.freeBlocks === idle.freeBlocks, 'the blocks to return');
  });

  test('a client process that dies mid-stream frees the blocks', async () => {
    const idle = await client.status();
    const script = join(dir, 'dying-client.mts');
    writeFileSync(
      script,
      `import { connectEngine } from ${JSON.stringify(join(root, 'engine/service/client.ts'))};\n` +
        `const c = connectEngine(${JSON.stringify(server.address)});\n` +
        `for await (const e of c.generate({ prompt: { kind: 'text', text: 'Recite the alphabet slowly:' }, params: { temperature: 0, maxNewTokens: 400, ignoreEos: true } })) {\n` +
        `  if (e.type === 'token') { process.stdout.write('token\\n'); await new Promise(() => {}); }\n` +
        `}\n`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('token') && resolve());
      child.on('exit', (code) => reject(new Error(`client exited early with ${code}`)));
    });
    const busy = await client.status();
    assert.ok(busy.freeBlocks < idle.freeBlocks, 'the dying client holds blocks');
    child.kill('SIGKILL');
    await waitForStatus((s) => s.running === 0 && s.freeBlocks === idle.freeBlocks, 'the blocks to return');
  });
});

describe('bad requests get INVALID_ARGUMENT', () => {
  const invalid = (pattern: RegExp) => (e: unknown) =>
    e instanceof EngineError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message);

  test('an over-long prompt names the limit and the numbers', async () => {
    const ids = Array.from({ length: MAX_INPUT + 10 }, () => 1000);
    await assert.rejects(
      collect(client.generate({ prompt: { kind: 'tokens', ids }, params: { maxNewTokens: 4 } })),
      invalid(new RegExp(`${MAX_INPUT + 10} tokens, more than maxInputTokenLen \\(${MAX_INPUT}\\)`)),
    );
    const long = 'word '.repeat(MAX_INPUT * 2);
    await assert.rejects(client.generateAll(greedy(long)), invalid(/maxInputTokenLen|input|prompt/i));
  });

  test('out-of-range parameters name the field', async () => {
    await assert.rejects(
      collect(client.generate(greedy('x', { topP: 2 }))),
      (e: unknown) =>
        e instanceof EngineError &&
        e.code === 'INVALID_ARGUMENT' &&
        /top_?p/i.test(e.message) &&
        e.field !== undefined,
    );
    await assert.rejects(
      collect(client.generate(greedy('x', { maxNewTokens: -1 }))),
      invalid(/max_?new_?tokens/i),
    );
    await assert.rejects(
      collect(client.generate(greedy('x', { temperature: -0.5 }))),
      invalid(/temperature/i),
    );
  });

  test('malformed requests: no prompt, unknown role, undecodable bytes, empty cancel id', async () => {
    const noPrompt = pb.GenerateRequest.encode(pb.GenerateRequest.fromPartial({ params: {} })).finish();
    const err = await rawUnary(server.address, '/prism.engine.v1.Engine/Generate', Buffer.from(noPrompt));
    assert.equal(err?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(err?.details ?? '', /^prompt: one of text, tokens or chat is required/);

    const badRole = pb.GenerateRequest.encode(
      pb.GenerateRequest.fromPartial({
        prompt: { $case: 'chat', chat: { messages: [{ role: 'wizard', content: 'hi' }] } },
      }),
    ).finish();
    const roleErr = await rawUnary(server.address, '/prism.engine.v1.Engine/Generate', Buffer.from(badRole));
    assert.equal(roleErr?.code, grpc.status.INVALID_ARGUMENT);
    await assert.rejects(
      collect(
        client.generate({
          prompt: { kind: 'chat', messages: [{ role: 'wizard' as 'user', content: 'hi' }] },
          params: {},
        }),
      ),
      invalid(/prompt\.chat\.messages\[0\]\.role: must be one of system, user, assistant, tool/),
    );

    const garbage = await rawUnary(
      server.address,
      '/prism.engine.v1.Engine/Generate',
      Buffer.from([0x12, 0xff, 0xff, 0xff, 0x0f]),
    );
    assert.equal(garbage?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(garbage?.details ?? '', /cannot decode/);

    await assert.rejects(client.cancel(''), invalid(/request_id: is required/));
    // The server is still healthy after all of that.
    assert.equal((await client.tokenize('ok', false)).length >= 1, true);
  });
});
