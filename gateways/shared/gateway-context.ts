/**
 * What every route handler gets: the engine (in-process, gRPC client or a pool of clients —
 * handlers don't know which), the resolved gateway config, the engine's static info (read once
 * at start) and the gateway's own state (stopping, instance role).
 */
import { checkAdapterName, type Engine, type EngineInfo } from '../../engine/api.js';
import { EventEmitter } from 'node:events';
import type { GatewayConfig } from '../config.js';
import { FamilyStats } from './family-stats.js';
import { HttpError } from './http-error.js';

export class GatewayState extends EventEmitter {
  /** Set by /stopService: new inference requests get 503 while the engine drains. */
  stopping = false;
  /** Role assigned through POST /v{1,2}/role/{role}; reported by /v{1,2}/status. */
  role: 'none' | 'prefill' | 'decode' | 'flex' = 'none';
  /** Inference requests and failures per API family (gateway-wide, all listeners). */
  readonly families = new FamilyStats();
  /** Emitted once the drain finished; `prism serve` closes the listeners and exits. */
  markStopped(): void {
    this.emit('stopped');
  }
}

export interface GatewayContext {
  readonly engine: Engine;
  readonly config: GatewayConfig;
  readonly info: EngineInfo;
  readonly state: GatewayState;
  /** Version string reported by /v2, /info. */
  readonly version: string;
  /** The other models behind the same gateway (gateways/model-dispatch.ts routes to them); absent: none. */
  readonly peers?: readonly EngineInfo[];
}

/** Inference routes call this first (MindIE `CheckHealthAndStop`). */
export function assertAccepting(gw: GatewayContext): void {
  if (gw.state.stopping) throw new HttpError('unavailable', 'The service has been stopped');
}

/**
 * The model a request names. Absent = the served model; any other name is a LoRA adapter
 * id, which the engine resolves (an unknown one fails NOT_FOUND: 404 in the family's
 * shape). A name that cannot be an adapter id is unknown here already.
 */
export function resolveModel(gw: GatewayContext, name: unknown, field = 'model'): string {
  if (name === undefined || name === null || name === '') return gw.info.modelName;
  if (typeof name !== 'string') throw new HttpError('validation', `${field}: must be a string`, field);
  if (name !== gw.info.modelName && checkAdapterName(name) !== undefined)
    throw new HttpError('not_found', `Model ${name} not found.`, field);
  return name;
}

/**
 * Names Hugging Face's clients put in `model` when the user named none: `InferenceClient`
 * sends "dummy" (older releases and TGI's own examples "tgi"). TGI ignores the name; Prism
 * takes these two as the served model, unless an adapter of that name is loaded. Any other
 * unknown name is still 404, so a typo never gets an answer from a model it did not ask for.
 */
const PLACEHOLDER_MODEL_NAMES: ReadonlySet<string> = new Set(['dummy', 'tgi']);

/** `resolveModel`, with the placeholder names of Hugging Face's clients taken as the served model. */
export async function resolveRequestedModel(
  gw: GatewayContext,
  name: unknown,
  field = 'model',
): Promise<string> {
  if (typeof name === 'string' && PLACEHOLDER_MODEL_NAMES.has(name) && !(await servesModel(gw, name)))
    return gw.info.modelName;
  return resolveModel(gw, name, field);
}

/** The adapter field of an engine request for the resolved `model` (none for the base model). */
export function adapterFor(gw: GatewayContext, model: string): { adapter?: string } {
  return model === gw.info.modelName ? {} : { adapter: model };
}

/**
 * `resolveModel` for routes that never reach generation (tokenizer routes, count_tokens),
 * where the engine would not resolve an adapter's name: an unknown one is 404 here.
 */
export async function resolveServedModel(
  gw: GatewayContext,
  name: unknown,
  field = 'model',
): Promise<string> {
  const model = resolveModel(gw, name, field);
  if (!(await servesModel(gw, model))) throw new HttpError('not_found', `Model ${model} not found.`, field);
  return model;
}

/** True when `name` is the base model or a loaded adapter (metadata routes). */
export async function servesModel(gw: GatewayContext, name: string): Promise<boolean> {
  if (name === gw.info.modelName) return true;
  const { adapters } = await gw.engine.listAdapters();
  return adapters.some((a) => a.name === name);
}
