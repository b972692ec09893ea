/**
 * The engine ⇄ proto mapping and the error-code mapping, through real protobuf bytes:
 * what the client sends is what the server hands the engine, and back.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Metadata, status as Status } from '@grpc/grpc-js';
import * as pb from '../../gen/prism/engine/v1/engine.js';
import { EngineError, type EngineErrorCode } from '../errors.js';
import type { EngineStatus, Constraint, FinishEvent, GenerateRequest, TokenEvent } from '../types.js';
import {
  eventFromProto,
  eventToProto,
  generateRequestFromProto,
  generateRequestToProto,
  statusFromProto,
  statusToProto,
} from './mapping.js';
import { fromGrpcError, toGrpcStatus } from '../grpc-status.js';

function overTheWire(r: GenerateRequest): GenerateRequest {
  const bytes = pb.GenerateRequest.encode(generateRequestToProto(r)).finish();
  return generateRequestFromProto(pb.GenerateRequest.decode(bytes));
}

describe('requests', () => {
  test('every constraint kind survives the wire', () => {
    const constraints: Constraint[] = [
      { kind: 'json_object' },
      { kind: 'json_schema', schema: '{"type":"object"}' },
      { kind: 'regex', pattern: '[a-z]+' },
      { kind: 'choice', choices: ['a', 'b'] },
      { kind: 'grammar', ebnf: 'root ::= "x"' },
    ];
    for (const constraint of constraints) {
      const r: GenerateRequest = { prompt: { kind: 'text', text: 'x' }, params: {}, constraint };
      assert.deepEqual(overTheWire(r), r);
    }
  });

  test("a JSON Schema's strict flag survives the wire (absent stays absent)", () => {
    const strict: GenerateRequest = {
      prompt: { kind: 'text', text: 'x' },
      params: {},
      constraint: { kind: 'json_schema', schema: '{"type":"object"}', strict: true },
    };
    assert.deepEqual(overTheWire(strict), strict);
    const relaxed = { ...strict, constraint: { kind: 'json_schema', schema: '{"type":"object"}' } as const };
    assert.deepEqual(overTheWire(relaxed), relaxed);
  });

  test('every prompt form and every parameter survives the wire; absent stays absent', () => {
    const full: GenerateRequest = {
      requestId: 'r-1',
      prompt: { kind: 'text', text: 'héllo ✓', addSpecialTokens: false },
      params: {
        maxNewTokens: 7,
        temperature: 0.7,
        topK: 40,
        topP: 0.9,
        repetitionPenalty: 1.1,
        presencePenalty: -0.5,
        frequencyPenalty: 0.25,
        seed: 2 ** 40 + 3,
        doSample: false,
        stop: ['\n\n', 'END'],
        stopTokenIds: [2, 3],
        ignoreEos: true,
        logprobs: true,
        topLogprobs: 5,
        n: 2,
        bestOf: 3,
        truncate: 100,
        skipSpecialTokens: false,
        includeStopStrInOutput: true,
      },
    };
    assert.deepEqual(overTheWire(full), full);
    // 0.1 in float32 would come back as 0.10000000149; the proto uses double.
    assert.equal(
      overTheWire({ prompt: { kind: 'text', text: 'x' }, params: { topP: 0.1 } }).params.topP,
      0.1,
    );
    assert.deepEqual(overTheWire({ prompt: { kind: 'tokens', ids: [1, 2, 3] }, params: {} }), {
      prompt: { kind: 'tokens', ids: [1, 2, 3] },
      params: {},
    });
    assert.deepEqual(
      overTheWire({
        prompt: { kind: 'text', text: 'x' },
        params: { temperature: 0, topK: 0, doSample: false },
      }).params,
      { temperature: 0, topK: 0, doSample: false },
    );
    const chat: GenerateRequest = {
      prompt: {
        kind: 'chat',
        addGenerationPrompt: false,
        messages: [
          { role: 'system', content: 'be brief' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          { role: 'tool', content: '42', toolCallId: 'c1', name: 'f' },
        ],
      },
      params: {},
    };
    assert.deepEqual(overTheWire(chat), chat);
  });

  test('shape errors name the field', () => {
    assert.throws(
      () => generateRequestFromProto(pb.GenerateRequest.fromPartial({})),
      (e: unknown) => e instanceof EngineError && e.code === 'INVALID_ARGUMENT' && e.field === 'prompt',
    );
    const badRole = pb.GenerateRequest.fromPartial({
      prompt: { $case: 'chat', chat: { messages: [{ role: 'user' }, { role: 'robot' }] } },
    });
    assert.throws(
      () => generateRequestFromProto(badRole),
      /prompt\.chat\.messages\[1\]\.role: must be one of system, user, assistant, tool; got 'robot'/,
    );
    const badTool = pb.GenerateRequest.fromPartial({
      prompt: {
        $case: 'chat',
        chat: { messages: [{ role: 'assistant', toolCalls: [{ id: 'x', type: 'web' }] }] },
      },
    });
    assert.throws(() => generateRequestFromProto(badTool), /tool_calls\[0\]\.type: must be 'function'/);
  });
});

describe('events and status', () => {
  const overWire = (m: pb.GenerateStreamResponse) =>
    eventFromProto(pb.GenerateStreamResponse.decode(pb.GenerateStreamResponse.encode(m).finish()));

  test('token and finish events round-trip', () => {
    const token: TokenEvent = {
      type: 'token',
      requestId: 'r',
      index: 1,
      tokenIds: [5, 6],
      text: 'ab',
      logprobs: [
        { tokenId: 5, text: 'a', logprob: -0.5, top: [{ tokenId: 9, text: 'z', logprob: -1.25 }] },
        { tokenId: 6, text: 'b', logprob: -0.125, top: [] },
      ],
    };
    assert.deepEqual(overWire(eventToProto(token)), token);
    const plain: TokenEvent = { type: 'token', requestId: 'r', index: 0, tokenIds: [1], text: '' };
    assert.deepEqual(overWire(eventToProto(plain)), plain);
    for (const reason of ['stop', 'length', 'cancelled', 'error'] as const) {
      const finish: FinishEvent = {
        type: 'finish',
        requestId: 'r',
        index: 0,
        reason,
        text: 'ab',
        tokenIds: [5, 6],
        cumulativeLogprob: -0.625,
        usage: { promptTokens: 10, completionTokens: 2, cachedPromptTokens: 8 },
        timings: { queueMs: 1.5, prefillMs: 2.5, decodeMs: 3.5, ttftMs: 4.5 },
        seed: 2 ** 52 + 1,
        ...(reason === 'error' ? { error: 'boom' } : {}),
      };
      assert.deepEqual(overWire(eventToProto(finish)), finish);
    }
    assert.equal(overWire({ event: undefined }), undefined);
  });

  test('status round-trips with its histograms', () => {
    const h = { bounds: [0.1, 1], counts: [1, 2, 3], sum: 1.75, count: 3 };
    const s: EngineStatus = {
      running: 1,
      waiting: 2,
      freeBlocks: 3,
      totalBlocks: 4,
      blockSize: 16,
      maxBatchSize: 8,
      stopping: false,
      requestsReceived: 5,
      requestsSucceeded: 4,
      requestsFailed: 1,
      promptTokens: 100,
      generationTokens: 50,
      prefixCacheQueries: 64,
      prefixCacheHits: 32,
      preemptions: 1,
      ttft: h,
      interTokenLatency: h,
      e2eLatency: h,
      promptTokensPerRequest: h,
      generationTokensPerRequest: h,
      recentAvgTtft: 0.05,
      recentAvgInterToken: 0.02,
      runningLoraAdapters: ['a', 'b'],
      waitingLoraAdapters: ['c'],
      maxLora: 4,
      role: 'decode',
      roleStatus: 'RoleSwitching',
      leasedBlocks: 3,
      kvTransfersIn: 2,
      kvBytesIn: 1 << 20,
      kvTransferMsIn: 4.5,
      kvTokensIn: 96,
      kvTransfersOut: 1,
      kvBytesOut: 1 << 19,
      kvTransferFailures: 1,
    };
    assert.deepEqual(
      statusFromProto(pb.StatusResponse.decode(pb.StatusResponse.encode(statusToProto(s)).finish())),
      s,
    );
  });
});

describe('tool calling fields', () => {
  const overWire = (m: pb.GenerateStreamResponse) =>
    eventFromProto(pb.GenerateStreamResponse.decode(pb.GenerateStreamResponse.encode(m).finish()));
  test('tools, tool_choice (string and named), parallel_tool_calls survive the wire', () => {
    for (const toolChoice of ['none', 'auto', 'required', { function: 'f' }] as const) {
      const r: GenerateRequest = {
        prompt: {
          kind: 'chat',
          messages: [{ role: 'user', content: 'x' }],
          tools: [
            {
              name: 'f',
              description: 'd',
              parameters: { type: 'object', properties: { a: { type: 'string' } } },
            },
            { name: 'g' },
          ],
          toolChoice,
          parallelToolCalls: false,
        },
        params: {},
      };
      assert.deepEqual(overTheWire(r), r);
    }
    const plain: GenerateRequest = {
      prompt: { kind: 'chat', messages: [{ role: 'user', content: 'x' }] },
      params: {},
    };
    assert.deepEqual(overTheWire(plain), plain);
  });
  test('chat deltas, chat results, decode times and the tool_calls finish reason survive the wire', () => {
    const token: TokenEvent = {
      type: 'token',
      requestId: 'r',
      index: 0,
      tokenIds: [1],
      text: 'x',
      chat: {
        content: '',
        reasoning: 'because',
        toolCalls: [
          { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } },
          { index: 0, function: { arguments: '{"a"' } },
        ],
      },
    };
    assert.deepEqual(overWire(eventToProto(token)), token);
    const finish: FinishEvent = {
      type: 'finish',
      requestId: 'r',
      index: 0,
      reason: 'tool_calls',
      text: 't',
      tokenIds: [1, 2],
      cumulativeLogprob: -1,
      usage: { promptTokens: 1, completionTokens: 2, cachedPromptTokens: 0 },
      timings: { queueMs: 1, prefillMs: 2, decodeMs: 3, ttftMs: 4 },
      seed: 5,
      chat: {
        content: '',
        reasoningContent: 'because',
        toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a": 1}' } }],
        reasoningTokens: 3,
      },
      decodeTimesMs: [1.5],
    };
    assert.deepEqual(overWire(eventToProto(finish)), finish);
  });
});

describe('error codes', () => {
  const pairs: [EngineErrorCode, Status][] = [
    ['INVALID_ARGUMENT', Status.INVALID_ARGUMENT],
    ['NOT_FOUND', Status.NOT_FOUND],
    ['RESOURCE_EXHAUSTED', Status.RESOURCE_EXHAUSTED],
    ['UNAVAILABLE', Status.UNAVAILABLE],
    ['CANCELLED', Status.CANCELLED],
    ['GENERATION_FAILED', Status.INTERNAL],
    ['INTERNAL', Status.INTERNAL],
    ['UNIMPLEMENTED', Status.UNIMPLEMENTED],
  ];
  for (const [code, grpcCode] of pairs) {
    test(`${code} ⇄ ${Status[grpcCode]}, message, field and rule kept`, () => {
      const st = toGrpcStatus(
        new EngineError(code, 'params.top_p: must be in (0, 1]', 'params.top_p', 'must be in (0, 1]'),
      );
      assert.equal(st.code, grpcCode);
      assert.equal(st.details, 'params.top_p: must be in (0, 1]');
      const back = fromGrpcError(
        Object.assign(new Error('x'), { code: st.code, details: st.details, metadata: st.metadata }),
      );
      assert.equal(back.code, code);
      assert.equal(back.message, 'params.top_p: must be in (0, 1]');
      assert.equal(back.field, 'params.top_p');
      assert.equal(back.rule, 'must be in (0, 1]');
    });
  }
  test('non-engine errors are INTERNAL without a stack; transport codes map to the nearest engine code', () => {
    const st = toGrpcStatus(new TypeError('x is undefined'));
    assert.equal(st.code, Status.INTERNAL);
    assert.equal(st.details, 'internal error: x is undefined');
    const mk = (code: Status) =>
      fromGrpcError(Object.assign(new Error('m'), { code, details: 'd', metadata: new Metadata() })).code;
    assert.equal(mk(Status.DEADLINE_EXCEEDED), 'UNAVAILABLE');
    assert.equal(mk(Status.UNKNOWN), 'GENERATION_FAILED');
    assert.equal(mk(Status.OUT_OF_RANGE), 'INVALID_ARGUMENT');
    // The code in the metadata counts only where it agrees with the status.
    const claimed = (code: Status, sent: string) => {
      const metadata = new Metadata();
      metadata.set('prism-error-code', sent);
      return fromGrpcError(Object.assign(new Error('m'), { code, details: 'd', metadata })).code;
    };
    assert.equal(claimed(Status.INTERNAL, 'INTERNAL'), 'INTERNAL');
    assert.equal(claimed(Status.NOT_FOUND, 'INTERNAL'), 'NOT_FOUND');
    assert.equal(claimed(Status.INTERNAL, '__proto__'), 'GENERATION_FAILED');
  });
});

test('integers beyond the wire range are saturated, so the request still encodes', () => {
  const huge = 1.2345678901234568e29;
  const msg = generateRequestToProto({
    prompt: { kind: 'text', text: 'x' },
    params: {
      maxNewTokens: huge,
      topK: 1e308,
      truncate: huge,
      n: 2 ** 53,
      seed: 1e20,
      stopTokenIds: [2 ** 40],
    },
  });
  assert.doesNotThrow(() => pb.GenerateRequest.encode(msg).finish());
  const p = msg.params!;
  assert.equal(p.maxNewTokens, 2 ** 31 - 1);
  assert.equal(p.topK, 2 ** 31 - 1);
  assert.equal(p.truncate, 2 ** 31 - 1);
  assert.equal(p.n, 2 ** 31 - 1);
  assert.equal(p.seed, 2 ** 53);
  assert.deepEqual(p.stopTokenIds, [2 ** 32 - 1]);
});
