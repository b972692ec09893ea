// The Python the tests use (float reference, fixture generators, the Python OpenAI client):
// a project-local virtual environment, `.venv/`, holding exactly requirements-dev.txt.
// It is made on first use and remade when requirements-dev.txt changes (a stamp holds the
// file's sha256), so `npm test` works on a machine that never saw the project and never
// sees packages left on the machine. `PYTHON=/path/to/python` skips it and uses that
// interpreter as it is.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  }
}

/** Returns the `bin` folder to put first on PATH, or undefined when PYTHON is set. */
export function ensurePythonEnv(root) {
  if (process.env.PYTHON) return undefined;
  return ensureVenv(root, '.venv', 'requirements-dev.txt');
}

/**
 * A virtual environment at `dir` (relative to root) holding exactly `requirements`, made on
 * first use and remade when that file changes; returns its `bin` folder. The deployment
 * checks keep their tools in their own one (deploy/.venv, deploy/requirements.txt).
 */
export function ensureVenv(root, dir, requirements) {
  const venv = join(root, dir);
  const bin = join(venv, 'bin');
  const stampFile = join(venv, 'prism-requirements.sha256');
  const want = createHash('sha256')
    .update(readFileSync(join(root, requirements)))
    .digest('hex');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === want) return bin;
  console.log(`prism: setting up the Python environment in ${dir}/ (${requirements})`);
  rmSync(venv, { recursive: true, force: true });
  run('python3', ['-m', 'venv', venv], root);
  run(
    join(bin, 'python'),
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements],
    root,
  );
  writeFileSync(stampFile, want);
  return bin;
}
