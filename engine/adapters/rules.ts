/**
 * The spec's rules for adapter names and paths, in one place: the config loader (static
 * LoraModules), the management routes and gRPC LoadAdapter all call these. Each check
 * returns undefined when the value passes, or the rule it breaks (for the caller to put
 * in its own error shape).
 *
 * The path check (documented in config/README.md, "Adapter paths"):
 *  1. absolute, 1..4095 bytes (Linux PATH_MAX 4096 with its terminating NUL), no NUL byte;
 *  2. no `.` or `..` component and no repeated or trailing `/` (the path names the
 *     directory directly, with nothing to resolve);
 *  3. its resolved real path equals the path itself, so no component is a symbolic link
 *     (no escape through a link anywhere along the path);
 *  4. it is a directory, and it and its two files (adapter_config.json,
 *     adapter_model.safetensors, each a regular file, not a link) are owned by the running
 *     process's uid and gid and not writable by group or others (mode & 0o022 == 0).
 */
import { lstatSync, realpathSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from './peft-reader.js';

/** Letters, digits, '-', '_'; not starting or ending with '-' or '_'; 1-256 characters. */
const ADAPTER_NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,254}[A-Za-z0-9])?$/;
/** Letters, digits, '-', '.', '_'; not starting or ending with '-', '.' or '_'; 1-256 characters. */
const BASE_MODEL_NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,254}[A-Za-z0-9])?$/;
const PATH_MAX_BYTES = 4095;

export function checkAdapterName(name: unknown): string | undefined {
  if (typeof name !== 'string') return 'must be a string';
  if (!ADAPTER_NAME_RE.test(name)) {
    return "must be 1-256 letters, digits, '-' or '_', not starting or ending with '-' or '_'";
  }
  return undefined;
}

export function checkBaseModelName(name: unknown, modelName: string): string | undefined {
  if (typeof name !== 'string') return 'must be a string';
  if (!BASE_MODEL_NAME_RE.test(name)) {
    return "must be 1-256 letters, digits, '-', '.' or '_', not starting or ending with '-', '.' or '_'";
  }
  if (name !== modelName) return `must equal the served model's modelName '${modelName}', got '${name}'`;
  return undefined;
}

/** Rules 1-2: the path's text alone (no file-system access). */
export function checkAdapterPathText(path: unknown): string | undefined {
  if (typeof path !== 'string') return 'must be a string';
  if (path.length === 0) return 'must not be empty';
  if (Buffer.byteLength(path) > PATH_MAX_BYTES)
    return `must be at most ${PATH_MAX_BYTES} bytes (the OS path limit)`;
  if (path.includes('\0')) return 'must not contain a NUL byte';
  if (!path.startsWith('/')) return 'must be an absolute path';
  const parts = path.split('/').slice(1);
  if (parts.some((p) => p === '..')) return "must not contain a '..' component";
  if (parts.some((p) => p === '.')) return "must not contain a '.' component";
  if (path !== '/' && parts.some((p) => p === '')) return "must not contain '//' or end with '/'";
  return undefined;
}

function ownership(st: Stats, what: string): string | undefined {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (uid !== undefined && st.uid !== uid)
    return `${what} is owned by uid ${st.uid}, not by the running user (uid ${uid})`;
  if (gid !== undefined && st.gid !== gid)
    return `${what} has group gid ${st.gid}, not the running user's group (gid ${gid})`;
  if ((st.mode & 0o022) !== 0) {
    return `${what} is writable by ${st.mode & 0o020 ? 'group' : 'others'} (mode ${(st.mode & 0o777).toString(8)}); remove group/other write permission`;
  }
  return undefined;
}

/** Rules 1-4. The reason for a missing directory starts with "No adapter found". */
export function checkAdapterPath(path: unknown): string | undefined {
  const text = checkAdapterPathText(path);
  if (text) return text;
  const p = path as string;
  let st: Stats;
  try {
    st = lstatSync(p);
  } catch {
    return `No adapter found for ${p}`;
  }
  let real: string;
  try {
    real = realpathSync(p);
  } catch {
    return `No adapter found for ${p}`;
  }
  if (real !== p) return `resolves to ${real}: a component of the path is a symbolic link`;
  if (!st.isDirectory())
    return 'must be a directory holding adapter_config.json and adapter_model.safetensors';
  const dirProblem = ownership(st, 'the directory');
  if (dirProblem) return dirProblem;
  for (const name of [ADAPTER_CONFIG, ADAPTER_WEIGHTS]) {
    let fst: Stats;
    try {
      fst = lstatSync(join(p, name));
    } catch {
      return `No adapter found for ${p}: missing ${name}`;
    }
    if (fst.isSymbolicLink()) return `${name} is a symbolic link`;
    if (!fst.isFile()) return `${name} is not a regular file`;
    const problem = ownership(fst, name);
    if (problem) return problem;
  }
  return undefined;
}
