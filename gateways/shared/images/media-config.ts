/**
 * Where a gateway may take an image from, and how much of one it takes (vLLM's media options):
 * `data:` URLs always; local files only under `--allowed-local-media-path`; http(s) URLs only
 * with `--image-fetch`, within a byte and a time limit. The limits on bytes and pixels hold for
 * every source.
 */
import { realpathSync, statSync } from 'node:fs';

export interface MediaConfig {
  /** Local files (`file://` URLs) are read only under this directory (a real path); absent: refused. */
  readonly allowedLocalMediaPath?: string;
  /** http(s) URLs are fetched by the server; false: refused. */
  readonly fetchRemote: boolean;
  /** Time limit of one fetch, headers and body. */
  readonly fetchTimeoutMs: number;
  /** Largest encoded image, from any source (a data: URL's decoded bytes, a file, a fetched body). */
  readonly maxImageBytes: number;
  /** Largest decoded image in pixels (width × height), refused before its pixels are decoded. */
  readonly maxImagePixels: number;
  /** Images in one request. */
  readonly maxImages: number;
  /** Decoded pixels of one request's images together (RGB: 3 bytes each, carried to the engine). */
  readonly maxRequestPixels: number;
}

export const DEFAULT_MEDIA: MediaConfig = {
  fetchRemote: false,
  fetchTimeoutMs: 10_000,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagePixels: 4096 * 4096,
  maxImages: 16,
  maxRequestPixels: 4096 * 4096,
};

export const mediaFlagHelp = `  --allowed-local-media-path DIR
                        image parts may name local files (file:// URLs) under DIR (vLLM's
                        flag); without it file:// URLs are refused
  --image-fetch         image parts may name http(s) URLs, fetched by the server (off by
                        default: the server would reach any address a client names)
  --image-fetch-timeout-ms N
                        time limit of one image fetch (default 10000)
  --max-image-bytes N   largest encoded image from any source (default 20 MiB)
  --max-image-pixels N  largest image in pixels, width x height (default 4096 x 4096)`;

export const mediaFlagOptions = {
  'allowed-local-media-path': { type: 'string' },
  'image-fetch': { type: 'boolean' },
  'image-fetch-timeout-ms': { type: 'string' },
  'max-image-bytes': { type: 'string' },
  'max-image-pixels': { type: 'string' },
} as const;

function positiveFlag(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9]\d{0,14}$/.test(value)) throw new Error(`${flag}: must be a positive integer, got '${value}'`);
  return Number(value);
}

/** The media settings the flags give (a bad flag throws an Error naming it). */
export function mediaFromFlags(values: Record<string, unknown>): MediaConfig {
  const dir = values['allowed-local-media-path'] as string | undefined;
  let allowed: string | undefined;
  if (dir !== undefined) {
    try {
      allowed = realpathSync(dir);
      if (!statSync(allowed).isDirectory()) throw new Error('not a directory');
    } catch (e) {
      throw new Error(
        `--allowed-local-media-path: '${dir}' is not a readable directory (${(e as Error).message})`,
      );
    }
  }
  const maxImagePixels = positiveFlag(
    values['max-image-pixels'] as string | undefined,
    '--max-image-pixels',
    DEFAULT_MEDIA.maxImagePixels,
  );
  return {
    ...DEFAULT_MEDIA,
    ...(allowed !== undefined ? { allowedLocalMediaPath: allowed } : {}),
    fetchRemote: values['image-fetch'] === true,
    fetchTimeoutMs: positiveFlag(
      values['image-fetch-timeout-ms'] as string | undefined,
      '--image-fetch-timeout-ms',
      DEFAULT_MEDIA.fetchTimeoutMs,
    ),
    maxImageBytes: positiveFlag(
      values['max-image-bytes'] as string | undefined,
      '--max-image-bytes',
      DEFAULT_MEDIA.maxImageBytes,
    ),
    maxImagePixels,
    maxRequestPixels: Math.max(DEFAULT_MEDIA.maxRequestPixels, maxImagePixels),
  };
}
