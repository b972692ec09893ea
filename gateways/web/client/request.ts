/**
 * What the playground sends: OpenAI request bodies built from the settings panel and the
 * conversation, and the same request as a curl command. No DOM here, so Node tests it directly.
 */
export type Mode = 'chat' | 'completion';

export interface Settings {
  mode: Mode;
  model: string;
  system: string;
  temperature: number | null;
  top_p: number | null;
  top_k: number | null;
  max_tokens: number | null;
  seed: number | null;
  /** As typed: comma-separated, `\n` meaning a newline. */
  stop: string;
  logprobs: boolean;
  top_logprobs: number | null;
  responseFormat: 'text' | 'json_object' | 'json_schema';
  schemaName: string;
  /** JSON text of the schema, as typed. */
  schema: string;
  toolsOn: boolean;
  /** JSON text of the `tools` array, as typed. */
  tools: string;
  toolChoice: 'auto' | 'required' | 'none';
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One token of an answer with its logprob and the alternatives the server sent. */
export interface TokenInfo {
  token: string;
  logprob: number;
  top: { token: string; logprob: number }[];
}

export interface AnswerStats {
  /** Time to first token, ms (measured in the browser: request sent → first token arrived). */
  ttftMs: number | null;
  /** Completion tokens per second after the first token. */
  tokensPerSecond: number | null;
  completionTokens: number | null;
  promptTokens: number | null;
  cachedTokens: number | null;
  finishReason: string | null;
}

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  /** A user message's attached images as `data:` URLs, sent as `image_url` parts before its text. */
  images?: string[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** Playground-only, never sent. */
  stats?: AnswerStats;
  tokens?: TokenInfo[];
  error?: string;
}

export const DEFAULT_SETTINGS: Settings = {
  mode: 'chat',
  model: '',
  system: '',
  temperature: 0.7,
  top_p: 1,
  top_k: null,
  max_tokens: 256,
  seed: null,
  stop: '',
  logprobs: false,
  top_logprobs: 3,
  responseFormat: 'text',
  schemaName: 'answer',
  schema: JSON.stringify(
    {
      type: 'object',
      properties: { answer: { type: 'string' }, confidence: { type: 'number' } },
      required: ['answer', 'confidence'],
    },
    null,
    2,
  ),
  toolsOn: false,
  tools: JSON.stringify(
    [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather in a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      },
    ],
    null,
    2,
  ),
  toolChoice: 'auto',
};

/** A settings field the user typed wrong; the message names the field. */
export class SettingsError extends Error {}

export function stopStrings(stop: string): string[] {
  return stop
    .split(',')
    .map((s) => s.replaceAll('\\n', '\n'))
    .filter((s) => s.length > 0);
}

function parseJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new SettingsError(`${field}: not valid JSON (${(err as Error).message})`);
  }
}

/** The sampling fields both endpoints share; empty fields are left out (server default). */
function sampling(s: Settings): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (s.model) body.model = s.model;
  for (const k of ['temperature', 'top_p', 'top_k', 'max_tokens', 'seed'] as const) {
    if (s[k] !== null && Number.isFinite(s[k])) body[k] = s[k];
  }
  const stop = stopStrings(s.stop);
  if (stop.length > 0) body.stop = stop;
  return body;
}

/** A message's `content`: its text, or with images OpenAI's parts, the images first, then the text (when any). */
function contentOf(m: Message): string | null | Record<string, unknown>[] {
  if (!m.images?.length) return m.content;
  const parts: Record<string, unknown>[] = m.images.map((url) => ({ type: 'image_url', image_url: { url } }));
  if (m.content) parts.push({ type: 'text', text: m.content });
  return parts;
}

export function chatBody(s: Settings, messages: readonly Message[], stream = true): Record<string, unknown> {
  const sent: Record<string, unknown>[] = [];
  if (s.system.trim()) sent.push({ role: 'system', content: s.system });
  for (const m of messages) {
    if (m.error) continue;
    const out: Record<string, unknown> = { role: m.role, content: contentOf(m) };
    if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
    if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
    sent.push(out);
  }
  const body: Record<string, unknown> = { ...sampling(s), messages: sent };
  if (s.logprobs) {
    body.logprobs = true;
    if (s.top_logprobs) body.top_logprobs = s.top_logprobs;
  }
  if (s.responseFormat === 'json_object') body.response_format = { type: 'json_object' };
  if (s.responseFormat === 'json_schema') {
    const schema = parseJson(s.schema, 'JSON schema');
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
      throw new SettingsError('JSON schema: must be a JSON object');
    if (!s.schemaName.trim()) throw new SettingsError('Schema name: must not be empty');
    body.response_format = { type: 'json_schema', json_schema: { name: s.schemaName.trim(), schema } };
  }
  if (s.toolsOn) {
    const tools = parseJson(s.tools, 'Tools');
    if (!Array.isArray(tools)) throw new SettingsError('Tools: must be a JSON array of tools');
    body.tools = tools;
    body.tool_choice = s.toolChoice;
  }
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

export function completionBody(s: Settings, prompt: string, stream = true): Record<string, unknown> {
  const body: Record<string, unknown> = { ...sampling(s), prompt };
  if (s.logprobs) body.logprobs = s.top_logprobs ?? 0;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/** A string as one single-quoted shell word. */
function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The same request as a curl command; the key, when one is set, is read from $PRISM_API_KEY, never written out. */
export function curlCommand(baseUrl: string, path: string, body: unknown, withKey: boolean): string {
  const lines = [`curl -N ${shellQuote(baseUrl + path)}`, `-H 'Content-Type: application/json'`];
  if (withKey) lines.push(`-H "Authorization: Bearer $PRISM_API_KEY"`);
  lines.push(`-d ${shellQuote(JSON.stringify(body, null, 2))}`);
  return lines.join(' \\\n  ');
}
