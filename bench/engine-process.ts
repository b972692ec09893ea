/**
 * `prism engine` in its own process for the gRPC-level benchmarks (bench:grpc, bench:pd):
 * started on a unix socket, ready once its Info RPC answers, stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectEngine, type GrpcEngineClient } from '../engine/service/client.js';
import type { Engine } from '../engine/types.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface EngineProcess {
  readonly child: ChildProcess;
  readonly client: GrpcEngineClient;
  /** The engine's listen address (`unix:…`). */
  readonly address: string;
}

/** Starts `prism engine --model MODEL --listen unix:SOCKET ARGS…`; resolves once it answers (2 min at most). */
export async function startEngineProcess(
  modelPath: string,
  socket: string,
  args: readonly string[] = [],
): Promise<EngineProcess> {
  const address = `unix:${socket}`;
  const cli = join(root, 'cli', 'main.ts');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', cli, 'engine', '--model', modelPath, '--listen', address, ...args],
    { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`prism engine exited with ${code}`))),
  );
  exited.catch(() => {});
  const client = connectEngine(address);
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await Promise.race([client.info(), exited]);
      return { child, client, address };
    } catch (e) {
      if (Date.now() > deadline || child.exitCode !== null) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** SIGTERM, and wait for the process to exit. */
export async function stopEngineProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const WORDS = [
  'river',
  'stone',
  'lantern',
  'orbit',
  'meadow',
  'cipher',
  'harbor',
  'violet',
  'summit',
  'echo',
  'maple',
  'quartz',
];

/**
 * `count` token ids of pseudo-random words seeded by `tag`: two tags share no prefix, so
 * nothing is prefix-cached between requests unless a benchmark means it to be.
 */
export async function wordPromptIds(
  engine: Pick<Engine, 'tokenize'>,
  tag: string,
  count: number,
): Promise<number[]> {
  // FNV-1a of the tag seeds a xorshift32 stream of word choices.
  let state = 2166136261;
  for (const ch of tag) state = Math.imul(state ^ ch.charCodeAt(0), 16777619) >>> 0;
  const next = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>>= 0);
  };
  let text = `${tag}.`;
  let ids: number[] = [];
  while (ids.length < count) {
    // Grow in chunks and tokenize once per chunk (one call each), until long enough.
    for (let j = 0; j < 200; j++) text += ` ${WORDS[next() % WORDS.length]}${next() % 97}`;
    ids = await engine.tokenize(text, false);
  }
  return ids.slice(0, count);
}
