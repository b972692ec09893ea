/**
 * A served engine whose "model" is a script (engine/testing/scripted-sim.ts): request k is
 * answered with replies[k], one character per token, behind the real engine core, gRPC server
 * and gateways. For tests that need exact model text: tool calls, reasoning.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { EngineCore } from '../engine/engine-core.js';
import { resolveEngineOptions } from '../engine/options.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer } from '../engine/service/server.js';
import { CharTokenizer } from '../engine/testing/char-tokenizer.js';
import { ScriptedSim } from '../engine/testing/scripted-sim.js';
import type { EngineInfo } from '../engine/types.js';
import { startGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME } from './gateways-harness.js';

/** A served engine whose "model" answers request k with replies[k]. */
export async function serveScripted(replies: string[], chatTemplate?: string) {
  const options = resolveEngineOptions({
    cacheBlockSize: 4,
    maxSeqLen: 4000,
    maxInputTokenLen: 3500,
    kvBlocks: 2048,
    prefixCache: false,
  });
  const info: EngineInfo = {
    modelName: MODEL_NAME,
    modelPath: 'scripted',
    architecture: 'llama',
    vocabSize: 100,
    contextLength: 4000,
    maxSeqLen: 4000,
    maxInputTokenLen: 3500,
    maxNewTokensCap: options.maxIterTimes,
    maxBatchSize: options.maxBatchSize,
    maxPrefillTokens: options.maxPrefillTokens,
    blockSize: 4,
    prefixCache: false,
    dtype: 'none',
    startedAt: Date.now(),
    engineId: 'scripted',
    modelFingerprint: 'scripted',
    device: 'cpu',
    deviceName: 'scripted',
    images: false,
  };
  const core = new EngineCore({
    runner: new ScriptedSim(replies, 2048, 4),
    tokenizer: new CharTokenizer(),
    options,
    info,
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'prism-tools-test-'));
  const server = await startEngineServer(core, { listen: `unix:${join(dir, 'engine.sock')}`, log: () => {} });
  const client = new GrpcEngineClient(server.address);
  const gateway = await startGateway({ engine: client, config: freePortConfig() });
  const url = gateway.url('service');
  return {
    url,
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    close: async () => {
      await gateway.close();
      await client.close();
      await server.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
