/**
 * The web UI's static files, as scripts/build-web.mjs (run by `npm ci` / `npm run build:web`)
 * left them in dist/web/: read once when the gateway starts, kept in memory with an ETag each.
 * Absent when the bundle was never built; the routes then answer 404 saying how to build it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

export interface WebBundle {
  /** `playground` and `dashboard` HTML pages. */
  readonly pages: ReadonlyMap<string, StaticFile>;
  /** Hashed asset files by name (served under /web/assets/). */
  readonly assets: ReadonlyMap<string, StaticFile>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The checkout's root: the nearest folder above this module holding package.json (works from the sources under tsx and from dist/). */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('web UI: no package.json above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

const WEB_DIR = join(projectRoot(), 'dist', 'web');

function load(path: string): StaticFile {
  const body = readFileSync(path);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, type: TYPES[extname(path)] ?? 'application/octet-stream', etag };
}

let cached: WebBundle | null | undefined;

/** The built bundle, or null when dist/web/ holds none. Read on first use, then kept. */
export function webBundle(dir: string = WEB_DIR): WebBundle | null {
  if (cached !== undefined && dir === WEB_DIR) return cached;
  let bundle: WebBundle | null = null;
  const manifestPath = join(dir, 'manifest.json');
  if (existsSync(manifestPath)) {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf-8')) as { pages: string[]; assets: string[] };
    bundle = {
      pages: new Map(manifest.pages.map((p) => [p, load(join(dir, `${p}.html`))])),
      assets: new Map(manifest.assets.map((a) => [a, load(join(dir, 'assets', a))])),
    };
  }
  if (dir === WEB_DIR) cached = bundle;
  return bundle;
}
