#!/usr/bin/env bash
# Starts the image that build.sh made with an OCI runtime (crun or runc) on this machine, waits for
# Prism to answer /health, sends one chat request, and stops it with SIGTERM (a graceful
# drain). The container shares the host's network namespace so the request can reach it on
# the loopback address; its root file system is read-only with /tmp on a tmpfs, as the chart
# runs it. Prints the start-up time (from `run` to the first healthy answer) and the answer.
#
# usage: deploy/image/run-check.sh OUT_DIR   (the build.sh output folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(cd "${1:?usage: deploy/image/run-check.sh OUT_DIR}" && pwd)
version=$(node -p "require('$root/package.json').version")
port=${PORT:-$((20000 + RANDOM % 20000))}
id="prism-check-$$"
# The OCI runtime: crun, or runc where crun refuses the host's cgroups (a v1/v2 "hybrid"
# layout whose v2 half has controllers, as on this project's machines). OCI_RUNTIME overrides.
runtime=${OCI_RUNTIME:-crun}
if [ -z "${OCI_RUNTIME:-}" ] && grep -qs . /sys/fs/cgroup/unified/cgroup.controllers; then runtime=runc; fi
command -v "$runtime" >/dev/null || { echo "run-check.sh: needs $runtime (apt-get install $runtime)" >&2; exit 1; }
work=$(mktemp -d)
cleanup() {
  "$runtime" kill "$id" KILL 2>/dev/null || true
  "$runtime" delete -f "$id" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
umoci unpack --image "$out/oci:$version" "$work/bundle" >/dev/null
jq --arg port "$port" --arg mport "$((port + 1))" --arg xport "$((port + 2))" '
  .process.args = ["/usr/local/bin/prism", "serve", "--host", "127.0.0.1", "--port", $port,
                   "--management-port", $mport, "--metrics-port", $xport, "--threads", "2"]
  | .process.terminal = false
  | .root.readonly = true
  | .linux.namespaces |= map(select(.type != "network"))
  | .mounts += [{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                 "options": ["nosuid", "nodev", "mode=1777", "size=64m"]}]
' "$work/bundle/config.json" > "$work/config.json"
mv "$work/config.json" "$work/bundle/config.json"

start=$(date +%s.%N)
"$runtime" run --bundle "$work/bundle" "$id" > "$work/container.log" 2>&1 &
runner=$!
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
  if ! kill -0 "$runner" 2>/dev/null; then
    echo "run-check.sh: the container exited:" >&2
    cat "$work/container.log" >&2
    exit 1
  fi
  if (($(echo "$(date +%s.%N) - $start > 180" | bc))); then
    echo "run-check.sh: no healthy answer within 180 s" >&2
    cat "$work/container.log" >&2
    exit 1
  fi
  sleep 0.1
done
ready=$(echo "$(date +%s.%N) - $start" | bc)
answer=$(curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"SmolLM2-135M-Instruct.Q4_1","messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":16,"temperature":0}')
"$runtime" kill "$id" TERM
wait "$runner" || true
echo "--- container log"
cat "$work/container.log"
echo "--- $runtime $("$runtime" --version | head -1 | tr -d "\n"); start-up ($runtime run to /health 200): ${ready} s"
echo "--- chat answer"
echo "$answer" | jq -c '{model, content: .choices[0].message.content, finish: .choices[0].finish_reason, usage}'
