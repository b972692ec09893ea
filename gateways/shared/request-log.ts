/**
 * The request log: one line per HTTP request once its response has ended — method, route,
 * family, status, latency, tokens, the engine request id — as text or JSON, to stderr or to a
 * size-rotated file, as config.json's LogConfig says (gateways/config.ts maps it). A client's
 * text (prompt, messages) is never written unless `logPrompts` asks for it.
 *
 * Levels: a 5xx answer is an error line, a 4xx a warning, anything else info, except health
 * probes and metrics scrapes, which are debug lines so that an orchestrator's probing does not
 * bury the requests at the default level.
 *
 * Engine calls (engine-calls.ts) report the engine requests a route makes and their token
 * counts through `noteEngineRequest` / `noteFinish`; the record they write to is the current
 * HTTP request's, found through AsyncLocalStorage, so no handler has to pass it down.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';
import { createStream, type RotatingFileStream } from 'rotating-file-stream';
import type {
  ContentPart,
  FinishEvent,
  GenerateRequest,
  PoolingRequest,
  PoolingResult,
} from '../../engine/api.js';
import { IGNORED_FIELDS_STATE } from './ignored-fields.js';

/** MindIE's LogConfig.logLevel words, least to most severe ('Warn' = 'Warning'). */
export type LogLevelName = 'Verbose' | 'Debug' | 'Info' | 'Warning' | 'Warn' | 'Error' | 'Critical';

export interface RequestLogConfig {
  /** Lines below this level are not written. */
  readonly level: LogLevelName;
  readonly format: 'text' | 'json';
  /** Absent: stderr. */
  readonly file?: { readonly path: string; readonly maxBytes: number; readonly maxFiles: number };
  /** Write the request's prompt text (or chat messages) on its line. */
  readonly includePrompt: boolean;
}

export const DEFAULT_REQUEST_LOG: RequestLogConfig = { level: 'Info', format: 'text', includePrompt: false };

type LineLevel = 'debug' | 'info' | 'warning' | 'error';

const rank: Record<LogLevelName | LineLevel, number> = {
  Verbose: 0,
  Debug: 1,
  debug: 1,
  Info: 2,
  info: 2,
  Warning: 3,
  Warn: 3,
  warning: 3,
  Error: 4,
  error: 4,
  Critical: 5,
};

/** What the engine calls of one HTTP request add to its line. */
interface RequestRecord {
  requestId?: string;
  promptTokens: number;
  completionTokens: number;
  /** Engine requests whose prompt was counted (a request with n sequences counts it once). */
  readonly counted: Set<string>;
  prompt?: string;
  /** A pooling request's task (embed, score, ...): its line says so, apart from generation. */
  pooling?: string;
}

const current = new AsyncLocalStorage<RequestRecord>();

/** Content as the log writes it: its parts in order, an image part as `[image N]` (N: its index in `images`). */
function contentText(text: string, parts: readonly ContentPart[] | undefined): string {
  if (!parts) return text;
  return parts.map((p) => (p.type === 'text' ? p.text : `[image ${p.image}]`)).join('');
}

/** A request's prompt on its line: a text prompt's text, token ids, or chat messages' roles and content. */
export function promptText(request: GenerateRequest): string {
  const p = request.prompt;
  if (p.kind === 'text') return contentText(p.text, p.parts);
  if (p.kind === 'tokens') return JSON.stringify(p.ids);
  return JSON.stringify(p.messages.map((m) => ({ role: m.role, content: contentText(m.content, m.parts) })));
}

/** An engine request was started for the current HTTP request. */
export function noteEngineRequest(request: GenerateRequest): void {
  const r = current.getStore();
  if (!r) return;
  r.requestId ??= request.requestId;
  if (r.prompt === undefined) r.prompt = promptText(request);
}

/** A pooling request was started (no result yet) or answered, for the current HTTP request. */
export function notePooling(request: PoolingRequest, result?: PoolingResult): void {
  const r = current.getStore();
  if (!r) return;
  r.requestId ??= request.requestId;
  r.pooling = request.task;
  if (r.prompt === undefined)
    r.prompt = JSON.stringify(
      request.inputs.map((x) => ('text' in x ? x.text : 'ids' in x ? x.ids : x.pair)),
    );
  if (result) r.promptTokens += result.promptTokens;
}

/** A sequence of the current HTTP request finished. */
export function noteFinish(ev: FinishEvent): void {
  const r = current.getStore();
  if (!r) return;
  if (!r.counted.has(ev.requestId)) {
    r.counted.add(ev.requestId);
    r.promptTokens += ev.usage.promptTokens;
  }
  r.completionTokens += ev.usage.completionTokens;
}

/** Where lines go. */
export interface LogSink {
  write(line: string): void;
  close(): Promise<void>;
}

export function openLogSink(config: RequestLogConfig): LogSink {
  const f = config.file;
  if (!f) return { write: (line) => void process.stderr.write(line + '\n'), close: async () => {} };
  const slash = f.path.lastIndexOf('/');
  const stream: RotatingFileStream = createStream(f.path.slice(slash + 1), {
    path: slash >= 0 ? f.path.slice(0, slash + 1) : '.',
    size: `${Math.max(1, Math.round(f.maxBytes / 1024))}K`,
    maxFiles: f.maxFiles,
  });
  // A log that cannot be written must not take the server down; say so once on stderr.
  let reported = false;
  stream.on('error', (err: Error) => {
    if (!reported) process.stderr.write(`prism gateway: request log ${f.path}: ${err.message}\n`);
    reported = true;
  });
  return {
    write: (line) => void stream.write(line + '\n'),
    close: () => new Promise((resolve) => stream.end(resolve)),
  };
}

const PROBE_ROUTE =
  /^\/(health|health\/timed(-\d+)?|metrics|metrics-json|v2\/health\/(live|ready)|v2\/models\/[^/]+\/ready)$/;

function lineLevel(method: string, path: string, status: number): LineLevel {
  if (status >= 500) return 'error';
  if (status >= 400) return 'warning';
  if ((method === 'GET' || method === 'HEAD') && PROBE_ROUTE.test(path)) return 'debug';
  return 'info';
}

interface RequestLine {
  readonly time: string;
  readonly level: LineLevel;
  readonly method: string;
  readonly route: string;
  readonly path: string;
  readonly family: string | null;
  readonly status: number;
  readonly latency_ms: number;
  readonly prompt_tokens?: number;
  readonly completion_tokens?: number;
  readonly request_id?: string;
  /** A pooling request's task (embed, score, tokens, classify); absent for generation. */
  readonly pooling?: string;
  /** The response ended before it was complete (the client went away mid-stream). */
  readonly aborted?: boolean;
  /** Fields the request sent that were accepted without effect (shared/ignored-fields.ts). */
  readonly ignored_fields?: string;
  readonly prompt?: string;
}

function formatLine(line: RequestLine, format: 'text' | 'json'): string {
  if (format === 'json') return JSON.stringify({ ...line, msg: 'request' });
  const parts = [
    line.time,
    line.level.toUpperCase(),
    line.method,
    line.path,
    `status=${line.status}`,
    `latency_ms=${line.latency_ms}`,
    `family=${line.family ?? '-'}`,
    `route=${line.route}`,
  ];
  if (line.request_id !== undefined) parts.push(`request_id=${line.request_id}`);
  if (line.pooling !== undefined) parts.push(`pooling=${line.pooling}`);
  if (line.prompt_tokens !== undefined) parts.push(`prompt_tokens=${line.prompt_tokens}`);
  if (line.completion_tokens !== undefined) parts.push(`completion_tokens=${line.completion_tokens}`);
  if (line.aborted) parts.push('aborted=true');
  // Quoted: the names are the client's text.
  if (line.ignored_fields !== undefined) parts.push(`ignored_fields=${JSON.stringify(line.ignored_fields)}`);
  if (line.prompt !== undefined) parts.push(`prompt=${JSON.stringify(line.prompt)}`);
  return parts.join(' ');
}

/** The ignored fields of a line: the first 64 names (a body may hold any number of keys). */
function ignoredList(names: readonly string[]): string {
  const shown = names.slice(0, 64).join(',');
  return names.length > 64 ? `${shown},(${names.length - 64} more)` : shown;
}

/**
 * Koa middleware writing one line per request when its response has ended (streams included).
 * `familyOf` names the API family of a request (set by the family-stats middleware's rules).
 */
export function requestLog(
  config: RequestLogConfig,
  sink: LogSink,
  familyOf: (method: string, path: string, state: Record<string, unknown>) => string | undefined,
): Middleware {
  return (ctx, next) => {
    const started = process.hrtime.bigint();
    const record: RequestRecord = { promptTokens: 0, completionTokens: 0, counted: new Set() };
    ctx.res.once('close', () => {
      const status = ctx.res.statusCode;
      const ignored = ctx.state[IGNORED_FIELDS_STATE] as string[] | undefined;
      const plain = lineLevel(ctx.method, ctx.path, status);
      // A request answered with fields it ignored is worth a warning, as vLLM logs one.
      const level = ignored && rank[plain] < rank.warning ? 'warning' : plain;
      if (rank[level] < rank[config.level]) return;
      const engineUsed = record.requestId !== undefined;
      const line: RequestLine = {
        time: new Date().toISOString(),
        level,
        method: ctx.method,
        route: (ctx as { _matchedRoute?: string })._matchedRoute ?? ctx.path,
        path: ctx.path,
        family: familyOf(ctx.method, ctx.path, ctx.state as Record<string, unknown>) ?? null,
        status,
        latency_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
        ...(engineUsed
          ? {
              request_id: record.requestId,
              prompt_tokens: record.promptTokens,
              completion_tokens: record.completionTokens,
              ...(record.pooling !== undefined ? { pooling: record.pooling } : {}),
            }
          : {}),
        ...(ctx.res.writableFinished ? {} : { aborted: true }),
        ...(ignored ? { ignored_fields: ignoredList(ignored) } : {}),
        ...(config.includePrompt && record.prompt !== undefined ? { prompt: record.prompt } : {}),
      };
      sink.write(formatLine(line, config.format));
    });
    return current.run(record, next);
  };
}
