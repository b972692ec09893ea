#!/usr/bin/env bash
# The fresh-machine check: runs `.ci/run` the way a machine that never saw the project would.
# - a clean clone of this checkout's HEAD (committed work only) in a temporary folder;
# - a clean Python: a new virtual environment with no packages first on PATH, so `python3`
#   and `pip` see nothing installed on this machine (the machine's own pip settings, such
#   as where its local wheels lie, stay as a fresh machine has them);
# - empty npm and pip caches, so nothing downloaded earlier is reused.
# Usage: scripts/fresh-check.sh [--keep]   (--keep leaves the folder for a look afterwards)
# Prints the test summary and the wall time; exits with .ci/run's status.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
keep=false
[ "${1:-}" = "--keep" ] && keep=true
work=$(mktemp -d -t prism-fresh-XXXXXX)
cleanup() { if $keep; then echo "fresh-check: left $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

git clone --quiet "$root" "$work/prism"
# CI clones beside the project's shared/ folder (test data such as JSONSchemaBench).
if [ -d "$root/../shared" ]; then ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"; fi
echo "fresh-check: clone of $(git -C "$work/prism" rev-parse --short HEAD) in $work/prism"
python3 -m venv "$work/python"
if [ -n "$("$work/python/bin/python" -m pip list --format=freeze 2>/dev/null | grep -v -E '^(pip|setuptools)==')" ]; then
  echo "fresh-check: the new virtual environment is not empty" >&2
  exit 1
fi
start=$(date +%s)
set +e
(
  cd "$work/prism"
  unset PYTHON VIRTUAL_ENV PYTHONPATH PYTHONHOME
  export PATH="$work/python/bin:$PATH"
  export npm_config_cache="$work/npm-cache"
  export PIP_CACHE_DIR="$work/pip-cache"
  export CI=true
  bash .ci/run </dev/null
) 2>&1 | tee "$work/ci.log"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s)
echo "fresh-check: .ci/run exited $status after $(((end - start) / 60)) min $(((end - start) % 60)) s"
grep -E '^ℹ (tests|pass|fail|skipped|duration_ms)' "$work/ci.log" | tail -5 || true
cp "$work/ci.log" "${TMPDIR:-/tmp}/prism-fresh-check.log"
echo "fresh-check: full log in ${TMPDIR:-/tmp}/prism-fresh-check.log"
exit "$status"
