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
  const venv = join(root, '.venv');
  const bin = join(venv, 'bin');
  const stampFile = join(venv, 'prism-requirements.sha256');
  const want = createHash('sha256')
    .update(readFileSync(join(root, 'requirements-dev.txt')))
    .digest('hex');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === want) return bin;
  console.log('prism: setting up the Python test environment in .venv/ (requirements-dev.txt)');
  rmSync(venv, { recursive: true, force: true });
  run('python3', ['-m', 'venv', venv], root);
  run(
    join(bin, 'python'),
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', 'requirements-dev.txt'],
    root,
  );
  writeFileSync(stampFile, want);
  return bin;
}
