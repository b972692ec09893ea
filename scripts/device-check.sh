#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (issue 29), as one command: it builds the CUDA
# library, runs the kernel check and the device tests (every kernel and the whole device
# path against the CPU reference, the teacher-forced numerics against the float reference),
# serves an OpenAI chat request with `prism serve --device cuda`, and benchmarks Prism against
# PyTorch + transformers on the same GPU, and Prism's CPU engine against llama.cpp on the
# machine's 16 cores. One table at the end.
#
# The machine has no Node and no network: `node scripts/device-pack.mjs` (on a machine
# with the project installed) packs Node, the npm packages, the built addons, tokenizers and
# the gguf wheel into .device/, which travels with the tree (the device tool's carry).
#
#   bash scripts/device-check.sh [--part 1|2|all] [--budget SECONDS]
#
# Part 1 (default, ~7 min on an H200): build, kernel check, device tests, numerics, serve,
# benchmarks of the 1B shape (BF16 with the PyTorch peer), the 8B Q4_K, the 1B Q4_K and Q8_0.
# Part 2: the 3B and 8B benchmarks (BF16 with the peer, Q8_0) and the CPU engine at 16
# threads against llama.cpp. --budget (default 450 s) stops starting benchmark rows once
# spent. Logs and the JSON results go to $LOG (default /tmp/prism-device-check); where $OUT
# names a folder (the device tool's), they are also left there as one archive with the summary.
#
# A rehearsal without a GPU (to check the script itself): PRISM_DEVICE_CHECK_LIB names a built
# library to use instead of building one (the CPU emulation build,
# build/cuda-emu/libprism_cuda_emu.so) and makes every step small: one-layer models, short
# benchmark runs, the quick kernel check, two numerics fixtures.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SMALL=${PRISM_DEVICE_CHECK_LIB:+1}
CHAT_TOKENS=16
[ -n "$SMALL" ] && CHAT_TOKENS=3
PART=1
BUDGET=450
while [ $# -gt 0 ]; do
  case "$1" in
    --part) PART=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    *) echo "usage: scripts/device-check.sh [--part 1|2|all] [--budget SECONDS]" >&2; exit 2 ;;
  esac
done
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
  case $name in bench-*) grep -h '^|\|^GPU benchmark' "$LOG/$name.log" >&2 ;; numerics) grep -h '^numerics' "$LOG/$name.log" >&2 ;; esac
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
export PATH=/tmp/prism-node/bin:$PATH
export PYTHONPATH=/tmp/prism-site${PYTHONPATH:+:$PYTHONPATH}
export PYTHON=python3
step environment unpack || true
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
  PRISM_TEST_CUDA_LIBRARY=$LIB PRISM_CUDA_LIBRARY=$LIB "${TSX[@]}" --test --test-concurrency=1 native/cuda/device.test.ts
}
fixtures() {
  python3 scripts/make-fixtures.py --out test/fixtures/generated --tokenizer-gguf "$LOG/tokenizers/smollm2.gguf" \
    --qwen-tokenizer "$LOG/tokenizers/qwen3" && ls test/fixtures/generated
}
numerics() {
  PRISM_TEST_DEVICE=cuda:0 PRISM_CUDA_LIBRARY=$LIB ${SMALL:+PRISM_TEST_NUMERICS_FIXTURES=qwen2-tied-bf16,llama-q4_k} \
    "${TSX[@]}" --test --test-concurrency=1 native/cuda/numerics.test.ts
}

# ---- 3. prism serve --device cuda answers an OpenAI chat request ----------------------------
serve() {
  local model=models/gpu/1b-bf16
  if [ -n "$SMALL" ]; then
    model=test/fixtures/generated/llama-q8_0.gguf  # the emulation is too slow for a 128k vocabulary
  else
    python3 scripts/make-gpu-models.py --sizes 1b --types bf16 "${MODEL_ARGS[@]}" || return 1
  fi
  PRISM_CUDA_LIBRARY=$LIB "${TSX[@]}" cli/main.ts serve --device cuda --model $model --model-name llama-1b \
    --port 18080 --management-port 18081 --metrics-port 18082 >"$LOG/serve.server.log" 2>&1 &
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
    python3 -c "import json,sys; c=json.load(open('$LOG/serve.chat.json')); print('chat answered:', c['usage'], repr(c['choices'][0]['message']['content'][:60]))"
    ok=0
  fi
  kill -TERM $pid 2>/dev/null
  wait $pid
  cat "$LOG/serve.server.log" | tail -n 5
  return $ok
}

# ---- 4. benchmarks ----------------------------------------------------------------------------
bench_gpu() { # SIZES TYPES NAME
  local small=() models=models/gpu
  [ -n "$SMALL" ] && models=models/gpu-small && small=(--layers 1 --vocab 512 --new-tokens 3 --prompt-tokens 8
    --aggregate 2 --aggregate-new-tokens 2 --prefill-tokens 16 --runs 1 --peer no)
  "${TSX[@]}" bench/gpu/run.ts --sizes "$1" --types "$2" --models $models --tokenizer "$LOG/tokenizers/llama3" \
    --budget-s "$(left)" --json "$LOG/$3.json" "${small[@]}"
}
bench_cpu() {
  python3 scripts/make-gpu-models.py --sizes 1b --types q4_k "${MODEL_ARGS[@]}" || return 1
  "${TSX[@]}" bench/engine.ts --model models/gpu/1b-q4_k.gguf --threads "$(nproc)" --runs 3 --sequences 16 --new-tokens 64
}

if [ "$PART" = 1 ] || [ "$PART" = all ]; then
  step build build
  step kernel-check kernel_check
  step device-tests device_tests
  step fixtures fixtures
  step numerics numerics
  step serve serve
  # The row with the PyTorch peer first, the 8B Q4_K (a roofline target) next, then the
  # quantized 1B files: rows that would start past --budget are skipped.
  step bench-1b bench_gpu 1b bf16 bench-1b
  step bench-8b-q4k bench_gpu 8b q4_k bench-8b-q4k
  step bench-1b-quant bench_gpu 1b q4_k,q8_0 bench-1b-quant
fi
if [ "$PART" = 2 ] || [ "$PART" = all ]; then
  [ -f "$LIB" ] || step build build
  step bench-3b bench_gpu 3b bf16,q8_0 bench-3b
  step bench-8b bench_gpu 8b bf16,q8_0 bench-8b
  step cpu-vs-llama.cpp bench_cpu
fi

summary() {
echo
echo "device check, part $PART, $(elapsed) s (load $(cut -d' ' -f1-3 /proc/loadavg)) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
printf '%s\n' "${RESULTS[@]}"
for f in "$LOG"/bench-*.log; do [ -f "$f" ] && grep -h '^|\|^GPU benchmark' "$f"; done
grep -h '^numerics' "$LOG/numerics.log" 2>/dev/null
[ -f "$LOG/cpu-vs-llama.cpp.log" ] && grep -h -A12 'decode' "$LOG/cpu-vs-llama.cpp.log" | head -n 20
}
summary | tee "$LOG/summary.txt"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
  cp "$LOG/summary.txt" "$OUT/summary-part$PART.txt"
  tar -czf "$OUT/device-check-part$PART.tar.gz" -C "$LOG" --exclude tokenizers . 2>/dev/null
fi
exit $FAILED
