/**
 * A copy of a vision fixture's folder (its weights linked, the other files copied) with one
 * JSON file edited: what the loaders' refusal tests load.
 */
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function editedFolder(
  source: string,
  work: string,
  file: string,
  edit: (json: Record<string, unknown>) => void,
): string {
  const dir = mkdtempSync(join(work, 'edited-'));
  for (const f of readdirSync(source)) {
    if (f.endsWith('.safetensors')) symlinkSync(join(source, f), join(dir, f));
    else copyFileSync(join(source, f), join(dir, f));
  }
  const json = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
  edit(json);
  writeFileSync(join(dir, file), JSON.stringify(json));
  return dir;
}
