#!/usr/bin/env node
// The `install` step: compiles the native addon with node-gyp. A full `node-gyp rebuild`
// reconfigures and recompiles everything; it is needed only when binding.gyp or the set of
// C++ source files changed (binding.gyp lists the sources when it is configured). Otherwise
// `node-gyp build` lets make recompile just what changed — which matters because `npx prism`
// re-runs this step the first time it is used in a checkout.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = join(root, 'build', 'prism-configure.stamp');

function configureStamp() {
  const sources = readdirSync(join(root, 'native', 'src'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.cc'))
    .sort();
  return createHash('sha256')
    .update(readFileSync(join(root, 'binding.gyp')))
    .update(sources.join('\n'))
    .update(process.version)
    .digest('hex');
}

const stamp = configureStamp();
const upToDate =
  existsSync(join(root, 'build', 'Makefile')) &&
  existsSync(stampFile) &&
  readFileSync(stampFile, 'utf-8') === stamp;
const gyp = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
// Build against the headers of the Node that runs us when its install ships them
// (<prefix>/include/node), as distribution packages do: node-gyp would otherwise download
// them, which needs a network this build must not depend on. npm's `nodedir` setting wins.
const prefix = dirname(dirname(process.execPath));
const nodedir =
  process.env.npm_config_nodedir ||
  (existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined);
const result = spawnSync(
  process.execPath,
  [gyp, upToDate ? 'build' : 'rebuild', '-j', 'max', ...(nodedir ? [`--nodedir=${nodedir}`] : [])],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (result.status !== 0) process.exit(result.status ?? 1);
writeFileSync(stampFile, stamp);
