// Fetching a pinned source release (or wheels) with pip, for the build scripts that compile
// third-party sources the project does not vendor: xgrammar's C++ core (build-native.mjs),
// llama.cpp for the benchmarks (build-llama-cpp.mjs), and the Python finder the CUDA compile
// check shares (build-cuda.mjs).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The first Python that runs: $PYTHON, then `first` (e.g. the project's .venv), then python3,
 * python. `purpose` completes the error: "<purpose> needs Python with pip ...".
 */
export function findPython(purpose, first = []) {
  for (const candidate of [process.env.PYTHON, ...first, 'python3', 'python']) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(`${purpose} needs Python with pip (python3 not found)`);
}

/**
 * Downloads `name==version`'s source release into `work` with pip, checks its sha256 against
 * the pin, unpacks it there and returns the unpacked `<name>-<version>` folder. Only the
 * source release comes as source (--no-binary for it); pip reads its metadata by installing
 * the build backend, which must then come as wheels (--only-binary :all:), since building
 * those from source too (cmake among them) takes many minutes.
 */
export function fetchSdist(py, { name, version, sha256, work }) {
  execFileSync(
    py,
    [
      '-m',
      'pip',
      'download',
      '--no-deps',
      '--quiet',
      '--only-binary=:all:',
      `--no-binary=${name}`,
      '-d',
      work,
      `${name}==${version}`,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const base = `${name.replace(/-/g, '_')}-${version}`;
  const sdist = [join(work, `${base}.tar.gz`), join(work, `${name}-${version}.tar.gz`)].find((p) =>
    existsSync(p),
  );
  if (!sdist) throw new Error(`pip download of ${name} ${version} produced no source release`);
  const sha = createHash('sha256').update(readFileSync(sdist)).digest('hex');
  if (sha !== sha256) throw new Error(`${sdist.split('/').pop()} has sha256 ${sha}, expected ${sha256}`);
  const unpacked = join(work, 'unpacked');
  execFileSync(py, ['-m', 'tarfile', '-e', sdist, unpacked], { stdio: 'inherit' });
  const top = sdist
    .split('/')
    .pop()
    .replace(/\.tar\.gz$/, '');
  return join(unpacked, top);
}
