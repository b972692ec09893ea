/**
 * One gateway in front of engines of different models (`prism gateway --engine A,B` where A
 * serves an embedder and B a generation model, say): each model has its own Koa app (its own
 * GatewayContext, so every family resolves, validates and answers for that model), and this
 * picks the app a request is for, by the model it names: the KServe path's
 * `/v2/models/{model}/...`, else the JSON body's `model`. A request that names none, or a
 * model nobody serves, goes to the first model's app (which answers an unknown one with the
 * family's 404). The body is read here once, under the configured limit, and handed to the
 * app's reader (shared/pre-read.ts, shared/body.ts) instead of the consumed stream.
 */
import type { RequestListener } from 'node:http';
import getRawBody from 'raw-body';
import { setPreReadBody } from './shared/pre-read.js';

export interface ModelApp {
  readonly model: string;
  readonly handle: RequestListener;
}

function modelOfPath(url: string | undefined): string | undefined {
  const m = /^\/v2\/models\/([^/?]+)/.exec(url ?? '');
  return m ? decodeURIComponent(m[1]!) : undefined;
}

function modelOfBody(bytes: Buffer): string | undefined {
  try {
    const body = JSON.parse(bytes.toString('utf-8')) as { model?: unknown };
    // Ollama's clients name the served model `name:latest`.
    return typeof body?.model === 'string' ? body.model.replace(/:latest$/, '') : undefined;
  } catch {
    return undefined; // the app reports the broken JSON in its family's shape
  }
}

export function modelDispatcher(apps: readonly ModelApp[], maxBodyBytes: number): RequestListener {
  const byName = new Map(apps.map((a) => [a.model, a]));
  const fallback = apps[0]!;
  return (req, res) => {
    const pathModel = modelOfPath(req.url);
    if (pathModel !== undefined || req.method !== 'POST') {
      (byName.get(pathModel ?? '') ?? fallback).handle(req, res);
      return;
    }
    getRawBody(req, { limit: maxBodyBytes, length: req.headers['content-length'] || undefined }).then(
      (bytes) => {
        setPreReadBody(req, { bytes });
        (byName.get(modelOfBody(bytes) ?? '') ?? fallback).handle(req, res);
      },
      (error: unknown) => {
        setPreReadBody(req, { error });
        fallback.handle(req, res);
      },
    );
  };
}
