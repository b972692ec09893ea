/**
 * MindIE's native control routes (management listener): slot counts, static config, dynamic
 * status, instance role, graceful stop, JSON metrics.
 */
import type { Context } from 'koa';
import type { GatewayContext } from '../shared/gateway-context.js';
import { EngineError } from '../../engine/api.js';
import { HttpError, invalid } from '../shared/http-error.js';
import { readJsonBody } from '../shared/body.js';
import { prismMetrics } from './metrics-detail.js';

export async function handleSlotCount(gw: GatewayContext, ctx: Context, model: string): Promise<void> {
  if (model !== gw.info.modelName)
    throw new HttpError('not_found', `Model ${model} not found.`, 'model_name');
  const s = await gw.engine.status();
  ctx.body = {
    total_slots: s.maxBatchSize,
    free_slots: Math.max(0, s.maxBatchSize - s.running),
    available_tokens_length: s.freeBlocks * s.blockSize,
  };
}

export function handleConfig(gw: GatewayContext, ctx: Context): void {
  const m = gw.config.model;
  ctx.body = {
    modelName: gw.info.modelName,
    maxSeqLen: gw.info.maxSeqLen,
    npuMemSize: m.npuMemSize,
    cpuMemSize: m.cpuMemSize,
    worldSize: m.worldSize,
    maxOutputLen: gw.info.maxNewTokensCap,
    cacheBlockSize: gw.info.blockSize,
  };
}

/**
 * The engine's split prefill/decode role (engine/kv-transfer/roles.ts): `none` while it runs
 * both halves (MindIE's PD-mixed), and `RoleSwitching` while requests the new role refuses drain.
 */
export async function handleStatus(gw: GatewayContext, ctx: Context, version: 1 | 2): Promise<void> {
  const s = await gw.engine.status();
  const availSlots = Math.max(0, s.maxBatchSize - s.running);
  const resource: Record<string, unknown> = {
    availSlotsNum: availSlots,
    availBlockNum: s.freeBlocks,
    waitingRequestNum: s.waiting,
    runningRequestNum: s.running,
    swappedRequestNum: 0,
    freeNpuBlockNums: s.freeBlocks,
    freeCpuBlockNums: 0,
    totalNpuBlockNums: s.totalBlocks,
    totalCpuBlockNums: 0,
  };
  if (version === 2) {
    Object.assign(resource, {
      totalAvailNpuSlotsNum: availSlots,
      totalAvailNpuBlockNum: s.freeBlocks,
      dpInstMap: {},
      maxAvailNpuBlockNum: s.freeBlocks,
    });
  }
  ctx.body = {
    service: {
      roleStatus: s.stopping ? 'RoleUnknown' : s.roleStatus,
      currentRole: s.role === 'mixed' ? (gw.state.role === 'flex' ? 'flex' : 'none') : s.role,
      // Prism's: where the model runs ('cpu' or 'cuda:N') and that device in words.
      device: gw.info.device,
      deviceName: gw.info.deviceName,
    },
    resource,
    linkStatus: { peers: [] },
  };
}

/**
 * POST /v{1,2}/role/{role}: assigns the engine's role (prefill or decode; v1's `flex` runs
 * both halves, Prism's mixed role). The body (local / peers devices) must be a JSON object;
 * its devices are MindIE's and mean nothing to Prism. A change while the last one still
 * drains is refused MindIE's way: 200 with the reason in `result`.
 */
export async function handleRole(
  gw: GatewayContext,
  ctx: Context,
  version: 1 | 2,
  role: string,
): Promise<void> {
  const allowed = version === 1 ? (['prefill', 'decode', 'flex'] as const) : (['prefill', 'decode'] as const);
  const known = allowed.find((r) => r === role);
  if (!known)
    throw new HttpError('not_found', `role: must be one of ${allowed.join(', ')}, got '${role}'`, 'role');
  const body = await readJsonBody(ctx, gw.config.maxRequestBytes);
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalid('request body', 'must be a JSON object');
  try {
    await gw.engine.setRole(known === 'flex' ? 'mixed' : known);
  } catch (e) {
    if (e instanceof EngineError && e.code === 'UNAVAILABLE') {
      ctx.body = { result: e.message };
      return;
    }
    throw e;
  }
  gw.state.role = known;
  ctx.body = { result: 'OK' };
}

/**
 * GET /stopService: stop admitting requests (503), wait until running and queued ones finish,
 * answer 200, then let the process stop. `?mode=Force` (SIGKILL of the process group) is refused.
 */
export async function handleStopService(gw: GatewayContext, ctx: Context): Promise<void> {
  if (ctx.query.mode !== undefined)
    throw invalid('mode', `'${String(ctx.query.mode)}' is not supported (only the graceful stop)`);
  if (gw.state.stopping) throw new HttpError('unavailable', 'The service has been stopped.');
  gw.state.stopping = true;
  await gw.engine.drain();
  ctx.status = 200;
  ctx.body = ''; // MindIE answers with no body
  ctx.res.once('finish', () => gw.state.markStopped());
}

/**
 * GET /metrics-json: MindIE's vector of five values (strings), TTFT/TBT in milliseconds, and
 * beside it Prism's `prism` object (metrics-detail.ts) that the dashboard reads.
 */
export async function handleMetricsJson(gw: GatewayContext, ctx: Context): Promise<void> {
  const s = await gw.engine.status();
  const instance = `${gw.config.management.host}:${gw.config.management.port}`;
  const entry = (name: string, value: number): object => ({
    metric: [{ __name__: name, job: 'node', instance }],
    value: String(value),
  });
  ctx.body = {
    resultType: 'vector',
    result: [
      entry('TTFT', Math.round(s.recentAvgTtft * 1000 * 1000) / 1000),
      entry('TBT', Math.round(s.recentAvgInterToken * 1000 * 1000) / 1000),
      entry('waitingInferRequestNum', s.waiting),
      entry('processingInferRequestNum', s.running),
      entry('remainBlocks', s.freeBlocks),
    ],
    prism: await prismMetrics(gw, s),
  };
}
