/**
 * A model's fingerprint for KV transfer: two engines may move KV between them only when they
 * run the same weights, or the decode engine would continue from another model's cache. The
 * hash covers the architecture and shapes the native loader reports, the tensor types, and
 * each weight file's size and three 1 MiB samples (start, middle, end) — hashing whole files
 * would cost seconds per gigabyte at every start; the samples tell apart different
 * quantizations, fine-tunes and truncated copies, which is what a deployment mixes up.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelInfo } from '../../native/native.js';

const SAMPLE_BYTES = 1 << 20;

function weightFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((f) => f.endsWith('.safetensors'))
    .sort()
    .map((f) => join(path, f));
}

function sampleFile(hash: ReturnType<typeof createHash>, file: string): void {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    hash.update(`${file.split(/[\\/]/).pop()}:${size};`);
    const buf = Buffer.alloc(SAMPLE_BYTES);
    for (const at of [
      0,
      Math.max(0, Math.floor(size / 2) - SAMPLE_BYTES / 2),
      Math.max(0, size - SAMPLE_BYTES),
    ]) {
      const n = readSync(fd, buf, 0, Math.min(SAMPLE_BYTES, size - at), at);
      hash.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

export function modelFingerprint(info: ModelInfo): string {
  const hash = createHash('sha256');
  const shape = {
    architecture: info.architecture,
    vocabSize: info.vocabSize,
    hiddenSize: info.hiddenSize,
    intermediateSize: info.intermediateSize,
    numLayers: info.numLayers,
    numHeads: info.numHeads,
    numKvHeads: info.numKvHeads,
    headDim: info.headDim,
    ropeTheta: info.ropeTheta,
    tensorTypes: Object.entries(info.tensorTypes).sort(([a], [b]) => a.localeCompare(b)),
  };
  hash.update(JSON.stringify(shape));
  for (const file of weightFiles(info.path)) sampleFile(hash, file);
  return hash.digest('hex').slice(0, 32);
}
