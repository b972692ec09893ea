#!/usr/bin/env node
// Part of the `prepare` step (npm ci / npm install): bundles the web playground and dashboard
// (gateways/web/client/) with esbuild into dist/web/. Asset names carry a content hash so the
// server can mark them immutable; the two HTML pages are written with those names filled in,
// plus manifest.json listing every file. Nothing is fetched at run time: uPlot and
// eventsource-parser are bundled in.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const clientDir = join(root, 'gateways', 'web', 'client');
const outDir = join(root, 'dist', 'web');
const pages = ['playground', 'dashboard'];

rmSync(outDir, { recursive: true, force: true });
mkdirSync(join(outDir, 'assets'), { recursive: true });

const result = await build({
  entryPoints: Object.fromEntries(pages.map((p) => [p, join(clientDir, `${p}.ts`)])),
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: join(outDir, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'eof',
});

const assets = {};
for (const [file, info] of Object.entries(result.metafile.outputs)) {
  if (!info.entryPoint) continue;
  const entry = basename(info.entryPoint, '.ts');
  assets[entry] = { js: basename(file), css: info.cssBundle ? basename(info.cssBundle) : undefined };
}

const files = [];
for (const page of pages) {
  const a = assets[page];
  if (!a?.js || !a?.css) throw new Error(`build-web: ${page} produced no script or stylesheet`);
  const html = readFileSync(join(clientDir, `${page}.html`), 'utf-8')
    .replaceAll('%SCRIPT%', `/web/assets/${a.js}`)
    .replaceAll('%STYLE%', `/web/assets/${a.css}`);
  writeFileSync(join(outDir, `${page}.html`), html);
}
for (const file of Object.keys(result.metafile.outputs)) files.push(basename(file));
writeFileSync(join(outDir, 'manifest.json'), JSON.stringify({ pages, assets: files.sort() }, null, 2) + '\n');
