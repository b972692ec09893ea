#!/usr/bin/env node
// Generates the TypeScript for proto/ into gen/ with ts-proto, compiled by buf (both npm
// packages: buf ships its compiler binary in a platform package, so no protoc to install).
// Usage: node scripts/gen-proto.mjs [OUT_DIR]   (default: gen/; the freshness test passes a temp dir)
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(root, 'gen'));

// ts-proto options (one place): grpc-js service definitions, ESM imports with `.js`
// suffixes for NodeNext, proto3 `optional` kept as `?:` fields, oneofs as tagged unions,
// 64-bit integers as JS numbers (seeds and counters stay below 2^53).
const tsProtoOptions = [
  'outputServices=grpc-js',
  'esModuleInterop=true',
  'importSuffix=.js',
  'forceLong=number',
  'oneof=unions',
  'env=node',
  'useOptionals=none',
  'exportCommonSymbols=false',
];

const template = {
  version: 'v2',
  plugins: [
    {
      local: join(root, 'node_modules', '.bin', 'protoc-gen-ts_proto'),
      out,
      opt: tsProtoOptions,
    },
  ],
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const buf = join(root, 'node_modules', '.bin', 'buf');
const result = spawnSync(buf, ['generate', 'proto', '--template', JSON.stringify(template)], {
  cwd: root,
  stdio: 'inherit',
});
if (result.error) {
  console.error(`gen-proto: cannot run buf (${result.error.message}); run npm install first`);
  process.exit(1);
}
process.exit(result.status ?? 1);
