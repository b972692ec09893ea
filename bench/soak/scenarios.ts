/**
 * The soak's request mix: one entry per API family and mode (OpenAI chat and completions,
 * TGI, vLLM, KServe, MindIE's /infer; streamed and unary). Each says how to build its request
 * — sampled (temperature 0.8) with the seed the soak drew, so a fault-free run of the same
 * request gives the same answer — how to read its stream's events, and where the answer's
 * text is, so a request's output can be compared with a reference run.
 */

export interface ScenarioTarget {
  readonly model: string;
}

export interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  readonly request: (
    t: ScenarioTarget,
    prompt: string,
    maxTokens: number,
    id: string,
    seed: number,
  ) => { path: string; body: unknown };
  /** For streams: does this event carry a token, end the stream, or report an error? */
  readonly event?: (data: string) => 'token' | 'end' | 'error' | 'other';
  /** For streams: the text an event adds to the answer. */
  readonly delta?: (data: string) => string;
  /**
   * For streams whose last event repeats the whole answer (TGI, MindIE): that text. It must
   * equal the deltas joined — a token handed over twice would show here.
   */
  readonly whole?: (data: string) => string | undefined;
  /** For unary answers: the answer's text. */
  readonly text?: (body: Record<string, unknown>) => string;
}

export const parseJson = (d: string): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(d) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

const TEMPERATURE = 0.8;

type Choice = { delta?: { content?: string }; text?: string; message?: { content?: string } };
const choice = (j: Record<string, unknown> | undefined): Choice | undefined =>
  (j?.choices as Choice[] | undefined)?.[0];
const tokenText = (j: Record<string, unknown> | undefined): string => {
  const t = j?.token as { text?: string | null; special?: boolean } | undefined;
  return t && !t.special && typeof t.text === 'string' ? t.text : '';
};

/** TGI's and MindIE's streams: a token per event, the last one with the whole `generated_text`. */
const tokenStream: Pick<Scenario, 'event' | 'delta' | 'whole'> = {
  event: (d) => {
    const j = parseJson(d);
    if (!j || j.error) return 'error';
    if (typeof j.generated_text === 'string') return 'end';
    return 'token';
  },
  delta: (d) => tokenText(parseJson(d)),
  whole: (d) => {
    const g = parseJson(d)?.generated_text;
    return typeof g === 'string' ? g : undefined;
  },
};

const chat = (t: ScenarioTarget, p: string, n: number, seed: number, stream: boolean) => ({
  path: '/v1/chat/completions',
  body: {
    model: t.model,
    messages: [{ role: 'user', content: p }],
    max_tokens: n,
    seed,
    temperature: TEMPERATURE,
    ...(stream ? { stream: true } : {}),
  },
});

export const scenarios: readonly Scenario[] = [
  {
    name: 'openai-chat-stream',
    stream: true,
    request: (t, p, n, _id, seed) => chat(t, p, n, seed, true),
    event: (d) => {
      if (d === '[DONE]') return 'end';
      const j = parseJson(d);
      if (!j || j.error) return 'error';
      return choice(j)?.delta?.content ? 'token' : 'other';
    },
    delta: (d) => (d === '[DONE]' ? '' : (choice(parseJson(d))?.delta?.content ?? '')),
  },
  {
    name: 'openai-chat',
    stream: false,
    request: (t, p, n, _id, seed) => chat(t, p, n, seed, false),
    text: (j) => choice(j)?.message?.content ?? '',
  },
  {
    name: 'openai-completions-stream',
    stream: true,
    request: (t, p, n, _id, seed) => ({
      path: '/v1/completions',
      body: { model: t.model, prompt: p, max_tokens: n, stream: true, seed, temperature: TEMPERATURE },
    }),
    event: (d) => {
      if (d === '[DONE]') return 'end';
      const j = parseJson(d);
      if (!j || j.error) return 'error';
      return choice(j)?.text ? 'token' : 'other';
    },
    delta: (d) => (d === '[DONE]' ? '' : (choice(parseJson(d))?.text ?? '')),
  },
  {
    name: 'tgi-generate-stream',
    stream: true,
    request: (_t, p, n, _id, seed) => ({
      path: '/generate_stream',
      body: { inputs: p, parameters: { max_new_tokens: n, do_sample: true, temperature: TEMPERATURE, seed } },
    }),
    ...tokenStream,
  },
  {
    name: 'tgi-generate',
    stream: false,
    request: (_t, p, n, _id, seed) => ({
      path: '/generate',
      body: { inputs: p, parameters: { max_new_tokens: n, do_sample: true, temperature: TEMPERATURE, seed } },
    }),
    text: (j) => (typeof j.generated_text === 'string' ? j.generated_text : ''),
  },
  {
    name: 'vllm-generate',
    stream: false,
    request: (_t, p, n, _id, seed) => ({
      path: '/generate',
      body: { prompt: p, max_tokens: n, seed, temperature: TEMPERATURE },
    }),
    text: (j) => (j.text as string[] | undefined)?.[0] ?? '',
  },
  {
    name: 'kserve-generate-stream',
    stream: true,
    request: (t, p, n, id, seed) => ({
      path: `/v2/models/${t.model}/generate_stream`,
      body: { id, text_input: p, parameters: { max_new_tokens: n, temperature: TEMPERATURE, seed } },
    }),
    event: (d) => {
      const j = parseJson(d);
      if (!j || j.error) return 'error';
      if ((j.details as { finish_reason?: string } | undefined)?.finish_reason) return 'end';
      return 'token';
    },
    delta: (d) => {
      const t = parseJson(d)?.text_output;
      return typeof t === 'string' ? t : '';
    },
  },
  {
    name: 'native-infer-stream',
    stream: true,
    request: (_t, p, n, _id, seed) => ({
      path: '/infer',
      body: {
        inputs: p,
        stream: true,
        parameters: { max_new_tokens: n, do_sample: true, temperature: TEMPERATURE, seed },
      },
    }),
    ...tokenStream,
  },
];
