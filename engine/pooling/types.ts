/**
 * The pooling records live with the rest of the engine's API (engine/types.ts, the ground
 * floor every layer reads); this folder's files import them from here.
 */
export type {
  PoolingCard,
  PoolingInput,
  PoolingRequest,
  PoolingResult,
  PoolingStats,
  PoolingTask,
} from '../types.js';
