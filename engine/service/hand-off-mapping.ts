/**
 * A hand-off (engine/kv-transfer/hand-off.ts) ⇄ its HandOff message: the server decodes the
 * ones it receives, and gives the engine's KV-transfer part the encoder for the ones it
 * sends (the request inside goes through mapping.ts, both ways).
 */
import type * as pb from '../../gen/prism/engine/v1/engine.js';
import type { HandOff } from '../kv-transfer/hand-off.js';
import { generateRequestFromProto, generateRequestToProto } from './mapping.js';

export function handOffToProto(h: HandOff): pb.HandOffRequest {
  return {
    ...h,
    request: generateRequestToProto(h.request),
    promptTokenIds: [...h.promptTokenIds],
    outputTokenIds: [...h.outputTokenIds],
  };
}

/** A checked message's hand-off (kv-transfer-mapping.ts's checkHandOff: its request is there). */
export function handOffFromProto(m: pb.HandOffRequest): HandOff {
  return { ...m, request: generateRequestFromProto(m.request!) };
}
