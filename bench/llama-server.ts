/**
 * A small OpenAI-compatible HTTP server around llama.cpp (node-llama-cpp's prebuilt CPU
 * binary), the comparison point of `npm run bench:http`: `POST /v1/chat/completions` (greedy,
 * `max_tokens`, `stream` with `stream_options.include_usage`), `GET /health`. Concurrent
 * requests run on separate sequences of one context, which node-llama-cpp batches together
 * in each llama_decode call — llama.cpp's own server works the same way.
 *
 * With --embedding (llama-server's flag; `npm run bench:embed`) it serves POST /v1/embeddings
 * instead, from node-llama-cpp's embedding context: the GGUF's own pooling, one input per
 * llama_decode (that context holds one sequence; llama-server batches up to --parallel).
 *
 * Usage: node --import tsx bench/llama-server.ts --model PATH [--port P] [--parallel N]
 *        [--ctx-per-seq N] [--threads N] [--embedding]
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { LlamaChatSession, type LlamaContextSequence } from 'node-llama-cpp';
import { loadPrebuiltLlamaModel } from './engine/llamacpp.js';

export interface LlamaServerOptions {
  readonly modelPath: string;
  /** Serve POST /v1/embeddings (the GGUF's pooling) instead of chat. */
  readonly embedding?: boolean;
  readonly port: number;
  readonly parallel: number;
  readonly ctxPerSeq: number;
  readonly threads: number;
}

/** A pool of context sequences: a request waits for a free one. */
class SequencePool {
  private readonly waiters: ((s: LlamaContextSequence) => void)[] = [];
  constructor(private readonly free: LlamaContextSequence[]) {}
  acquire(): Promise<LlamaContextSequence> {
    const s = this.free.pop();
    return s ? Promise.resolve(s) : new Promise((resolve) => this.waiters.push(resolve));
  }
  async release(s: LlamaContextSequence): Promise<void> {
    await s.clearHistory();
    const next = this.waiters.shift();
    if (next) next(s);
    else this.free.push(s);
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf-8'));
}

export async function startLlamaServer(
  o: LlamaServerOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const { llama, model } = await loadPrebuiltLlamaModel(o.modelPath, o.threads);
  if (o.embedding) return serveEmbeddings(o, llama, model);
  const context = await model.createContext({
    contextSize: o.parallel * o.ctxPerSeq,
    sequences: o.parallel,
    batchSize: Math.max(512, o.parallel),
    threads: { ideal: o.threads, min: o.threads },
  });
  const pool = new SequencePool(Array.from({ length: o.parallel }, () => context.getSequence()));
  const modelName = 'llama.cpp';

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = (await readBody(req)) as {
      messages: { role: string; content: string }[];
      max_tokens?: number;
      stream?: boolean;
      stream_options?: { include_usage?: boolean };
    };
    const sequence = await pool.acquire();
    const created = Math.floor(Date.now() / 1000);
    const id = `chatcmpl-llama-${Math.random().toString(36).slice(2)}`;
    const frame = (choices: object[], usage?: object): string =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: modelName, choices, ...(usage ? { usage } : {}) })}\n\n`;
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    try {
      const system = body.messages.find((m) => m.role === 'system')?.content;
      const user = body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      const session = new LlamaChatSession({
        contextSequence: sequence,
        systemPrompt: system,
        autoDisposeSequence: false,
      });
      let completion = 0;
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(frame([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
      }
      const text = await session.prompt(user, {
        maxTokens: body.max_tokens ?? 128,
        temperature: 0,
        signal: abort.signal,
        stopOnAbortSignal: true,
        onToken: (tokens) => (completion += tokens.length),
        onTextChunk: body.stream
          ? (chunk) => res.write(frame([{ index: 0, delta: { content: chunk }, finish_reason: null }]))
          : undefined,
      });
      const finish = completion >= (body.max_tokens ?? 128) ? 'length' : 'stop';
      const usage = { prompt_tokens: 0, completion_tokens: completion, total_tokens: completion };
      if (body.stream) {
        res.write(frame([{ index: 0, delta: {}, finish_reason: finish }]));
        if (body.stream_options?.include_usage) res.write(frame([], usage));
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: modelName,
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }],
            usage,
          }),
        );
      }
      session.dispose({ disposeSequence: false });
    } finally {
      await pool.release(sequence);
    }
  }

  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200).end();
      return;
    }
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      chat(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: { message: (err as Error).message, type: 'invalid_request_error' } }),
        );
      });
      return;
    }
    res.writeHead(404).end();
  });
  return listen(server, o.port, [context, model, llama]);
}

/** Serves on 127.0.0.1:port; close() stops the server, then disposes `owned` in order. */
async function listen(
  server: Server,
  port: number,
  owned: readonly { dispose(): Promise<void> }[],
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const o of owned) await o.dispose();
    },
  };
}

/** POST /v1/embeddings from one embedding context (inputs evaluated one at a time). */
async function serveEmbeddings(
  o: LlamaServerOptions,
  llama: Awaited<ReturnType<typeof loadPrebuiltLlamaModel>>['llama'],
  model: Awaited<ReturnType<typeof loadPrebuiltLlamaModel>>['model'],
): Promise<{ url: string; close(): Promise<void> }> {
  const ctx = await model.createEmbeddingContext({
    contextSize: o.ctxPerSeq,
    batchSize: o.ctxPerSeq,
    threads: o.threads,
  });
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
      res.writeHead(404).end();
      return;
    }
    void (async () => {
      try {
        const body = (await readBody(req)) as { input: string | string[] };
        const texts = typeof body.input === 'string' ? [body.input] : body.input;
        const data = [];
        for (const [index, text] of texts.entries())
          data.push({ object: 'embedding', index, embedding: [...(await ctx.getEmbeddingFor(text)).vector] });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data }));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (err as Error).message } }));
      }
    })();
  });
  return listen(server, o.port, [ctx, model, llama]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      port: { type: 'string', default: '0' },
      parallel: { type: 'string', default: '32' },
      'ctx-per-seq': { type: 'string', default: '512' },
      threads: { type: 'string', default: String(availableParallelism()) },
      embedding: { type: 'boolean', default: false },
    },
  });
  if (!values.model) throw new Error('--model PATH is required');
  const s = await startLlamaServer({
    modelPath: values.model,
    port: Number(values.port),
    parallel: Number(values.parallel),
    ctxPerSeq: Number(values['ctx-per-seq']),
    threads: Number(values.threads),
    embedding: values.embedding,
  });
  // The bench reads this line to find the port.
  process.stdout.write(`listening ${s.url}\n`);
  const stop = (): void => void s.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`llama-server: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
