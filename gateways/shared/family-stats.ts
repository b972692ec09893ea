/**
 * Inference requests and failed ones per API family, counted by the gateway (the engine does
 * not know which family a request came through). Read by /metrics-json (`prism.families`) and
 * the dashboard. A failure is a reply with status >= 400 or a handler that threw; an error
 * reported inside an already-started stream is the engine's `requestsFailed`, not counted here.
 */
import type Koa from 'koa';

const FAMILIES = [
  'openai',
  'anthropic',
  'ollama',
  'tgi',
  'vllm',
  'kserve',
  'native',
  'tei',
  'llamacpp',
] as const;
export type Family = (typeof FAMILIES)[number];

export interface FamilyCount {
  requests: number;
  errors: number;
}

/** The family of an inference route; undefined for everything else (health, listing, control). */
function familyOfRoute(method: string, path: string): Family | undefined {
  if (method !== 'POST') return undefined;
  if (
    path === '/v1/chat/completions' ||
    path === '/v1/completions' ||
    path === '/v1/responses' ||
    path === '/v1/embeddings'
  )
    return 'openai';
  if (path === '/v1/messages') return 'anthropic';
  if (path === '/api/chat' || path === '/api/generate' || path === '/api/embed' || path === '/api/embeddings')
    return 'ollama';
  // POST /rerank and POST / of a pooling model are marked by their dispatchers (ctx.state.family).
  if (/^\/(pooling|classify|score|v1\/score|v1\/rerank|v2\/rerank)$/.test(path)) return 'vllm';
  if (path === '/embed' || path === '/embed_all' || path === '/predict') return 'tei';
  if (path === '/embedding' || path === '/reranking') return 'llamacpp';
  if (path === '/generate' || path === '/generate_stream' || path === '/') return 'tgi';
  if (/^\/v2\/models\/[^/]+\/(infer|generate|generate_stream)$/.test(path)) return 'kserve';
  if (path === '/infer' || path === '/infer_token') return 'native';
  return undefined;
}

/** The family of an answered request: a vLLM body on `/generate` is marked by its dispatcher. */
export function familyOfRequest(
  method: string,
  path: string,
  state: Record<string, unknown>,
): Family | undefined {
  return (state.family as Family | undefined) ?? familyOfRoute(method, path);
}

export class FamilyStats {
  private readonly counts = new Map<Family, FamilyCount>(
    FAMILIES.map((f) => [f, { requests: 0, errors: 0 }]),
  );

  record(family: Family, failed: boolean): void {
    const c = this.counts.get(family)!;
    c.requests++;
    if (failed) c.errors++;
  }

  snapshot(): Record<Family, FamilyCount> {
    return Object.fromEntries([...this.counts].map(([f, c]) => [f, { ...c }])) as Record<Family, FamilyCount>;
  }
}

/**
 * Counts each inference request once it was answered. `POST /generate` is TGI's unless the
 * dispatcher set `ctx.state.family` (a vLLM body).
 */
export function familyStatsMiddleware(stats: FamilyStats): Koa.Middleware {
  return async (ctx, next) => {
    let threw = false;
    try {
      await next();
    } catch (err) {
      threw = true;
      throw err;
    } finally {
      const family = familyOfRequest(ctx.method, ctx.path, ctx.state as Record<string, unknown>);
      if (family) stats.record(family, threw || ctx.status >= 400);
    }
  };
}
