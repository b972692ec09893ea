/**
 * What every route handler gets: the engine (in-process, gRPC client or a pool of clients —
 * handlers don't know which), the resolved gateway config, the engine's static info (read once
 * at start) and the gateway's own state (stopping, instance role).
 */
import { EventEmitter } from 'node:events';
import type { Engine, EngineInfo } from '../../engine/types.js';
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
}

/** Inference routes call this first (MindIE `CheckHealthAndStop`). */
export function assertAccepting(gw: GatewayContext): void {
  if (gw.state.stopping) throw new HttpError('unavailable', 'The service has been stopped');
}

/**
 * The model a request names. Absent = the served model. Adapters are not served by this build,
 * so any other name is unknown (404).
 */
export function resolveModel(gw: GatewayContext, name: unknown, field = 'model'): string {
  if (name === undefined || name === null || name === '') return gw.info.modelName;
  if (typeof name !== 'string') throw new HttpError('validation', `${field}: must be a string`, field);
  if (name !== gw.info.modelName) throw new HttpError('not_found', `Model ${name} not found.`, field);
  return name;
}
