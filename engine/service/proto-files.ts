/**
 * Where the engine's .proto file lives at run time (for server reflection, which describes
 * services from the .proto source). Found by walking up from this module, so it works from
 * the TypeScript sources (tsx) and from the compiled dist/ tree alike.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ENGINE_PROTO_RELATIVE = join('prism', 'engine', 'v1', 'engine.proto');

/** The `proto/` folder that holds prism/engine/v1/engine.proto. */
export function protoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, ENGINE_PROTO_RELATIVE))) return candidate;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error(`cannot find proto/${ENGINE_PROTO_RELATIVE} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
