#!/usr/bin/env bash
# The one script run on the GPU machine, from the repository root:
#   configure (from scratch) + build, ctest, examples (quickstart, attention_block, custom_elementwise, train_gpt),
#   and with BENCH=1 the benchmarks (reduction, attention, RoPE, elementwise, GEMM, softmax, norm, indexing, loss,
#   random, random_sampling, optim) against PyTorch.
#
#   RESULTS=$OUT BENCH=1 tools/device-test.sh
#
# Knobs (environment):
#   RESULTS       output folder (default ./device-results); gets at most 8 files:
#                 env.txt build.log ctest.log run.log (examples + bench output)
#                 [ctest-junit.xml, only when BENCH!=1]
#                 bench.tgz (per family: ours/torch JSON, compare markdown + JSON)
#   BUILD_DIR     build folder (default build)
#   CLEAN         1 (default): delete BUILD_DIR first; 0: reuse it (incremental)
#   JOBS          build parallelism (default: all cores)
#   CMAKE_EXTRA   extra configure arguments (word-split), e.g.
#                 "-DBARACUDA_FAMILIES=gemm;reduce" for a quick round
#   CTEST_ARGS    extra ctest arguments, e.g. "-R cuda -j4"
#   CTEST_TIMEOUT per-test timeout in seconds (default 300)
#   BENCH         1: run the benchmarks (default 0)
#   BENCH_SET     which baracuda_bench families, each against PyTorch
#                 (default "reduce attn rope ew gemm softmax norm indexing loss random random_sampling optim"; attn = attention,
#                 ew = elementwise)
#   BENCH_FILTER  only bench cases whose name contains this (e.g. "sum.fwd")
#   TRAIN_ARGS    extra arguments of examples/train_gpt (run on the GPU after the other examples)
#   BENCH_ITERS   timed iterations per case (default: each family's own,
#                 30; attention 20; gemm 30)
# Every stage runs even when an earlier one failed (as far as its inputs
# exist); the exit status is non-zero when any stage failed.
set -euo pipefail

RESULTS=${RESULTS:-./device-results}
BUILD_DIR=${BUILD_DIR:-build}
CLEAN=${CLEAN:-1}
JOBS=${JOBS:-$(nproc)}
CTEST_ARGS=${CTEST_ARGS:-}
CTEST_TIMEOUT=${CTEST_TIMEOUT:-300}
BENCH=${BENCH:-0}
BENCH_FILTER=${BENCH_FILTER:-}
BENCH_ITERS=${BENCH_ITERS:-}
BENCH_SET=${BENCH_SET:-reduce attn rope ew gemm softmax norm indexing loss random random_sampling optim attention_paged}
TRAIN_ARGS=${TRAIN_ARGS:-}

mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
# Only our own files are removed, never anything else in RESULTS.
rm -f "$RESULTS"/{env.txt,build.log,ctest.log,ctest-junit.xml,run.log,bench.tgz}

declare -a SUMMARY=()
FAILED=0
note() { SUMMARY+=("$1"); echo "== $1"; }
fail() { note "$1"; FAILED=1; }
T0=$SECONDS
elapsed() { echo "$((SECONDS - T0))s"; }

# ---- environment --------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  echo "cores: $(nproc)"
  free -g 2>/dev/null | head -2 || true
  echo; nvidia-smi 2>&1 || true
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current \
    --format=csv 2>&1 || true
  echo; nvcc --version 2>&1 | tail -2 || true
  echo "g++: $(g++ --version 2>&1 | head -1)"
  echo "cmake: $(cmake --version 2>&1 | head -1)"
  echo "ninja: $(ninja --version 2>&1)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' 2>&1 || true
  echo; echo "git: $(git rev-parse --verify -q HEAD 2>/dev/null || echo "no commit")"
  git status --short 2>/dev/null | head -40 || true
} > "$RESULTS/env.txt" 2>&1
echo "== environment -> $RESULTS/env.txt"
grep -m1 -E "^\|[[:space:]]+[0-9]+[[:space:]]+NVIDIA|NVIDIA H" "$RESULTS/env.txt" || true

# ---- configure + build ---------------------------------------------------------
[[ "$CLEAN" == 1 ]] && rm -rf "$BUILD_DIR"
# GoogleTest sources carried in .devdeps/ (used only if no package is found).
GTEST_ARG=()
[[ -f .devdeps/googletest/CMakeLists.txt ]] && GTEST_ARG=(-DBARACUDA_GTEST_SOURCE_DIR="$PWD/.devdeps/googletest")
if cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DBARACUDA_CUDA=ON -DBARACUDA_BUILD_TESTS=ON -DBARACUDA_BUILD_EXAMPLES=ON -DBARACUDA_BUILD_BENCH=ON \
     "${GTEST_ARG[@]}" ${CMAKE_EXTRA:-} > "$RESULTS/build.log" 2>&1; then
  # -k 0: build every target that can be built, so one broken test or the bench
  # does not hide the results of everything else.
  if cmake --build "$BUILD_DIR" -j "$JOBS" -- -k 0 >> "$RESULTS/build.log" 2>&1; then
    note "build: ok ($(elapsed))"
  else
    fail "build: FAILED ($(elapsed)); first errors:"
    grep -m 15 -E "error|FAILED:" "$RESULTS/build.log" | cut -c1-300 || true
  fi
else
  fail "configure: FAILED"
  tail -30 "$RESULTS/build.log"
fi
# Keep build.log small: errors plus the tail when it grew huge.
if [[ $(stat -c %s "$RESULTS/build.log") -gt 1000000 ]]; then
  { echo "[build.log trimmed: error lines, then the last 2000 lines]"
    grep -m 400 -E "error|FAILED:" "$RESULTS/build.log" || true
    echo "[...]"; tail -2000 "$RESULTS/build.log"; } > "$RESULTS/build.log.tmp"
  mv "$RESULTS/build.log.tmp" "$RESULTS/build.log"
fi

# ---- tests -----------------------------------------------------------------------
if [[ "$BENCH" == 1 ]]; then JUNIT="$(cd "$BUILD_DIR" 2>/dev/null && pwd || echo /tmp)/ctest-junit.xml"
else JUNIT="$RESULTS/ctest-junit.xml"; fi
CTEST_LINE="ctest: not run (no build dir)"
if [[ -f "$BUILD_DIR/CTestTestfile.cmake" ]]; then
  # shellcheck disable=SC2086  # CTEST_ARGS is a list of words on purpose
  if ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout "$CTEST_TIMEOUT" --output-junit "$JUNIT" \
       $CTEST_ARGS 2>&1 | tee "$RESULTS/ctest.log"; then
    CTEST_OK=1
  else
    CTEST_OK=0
  fi
  CTEST_LINE="ctest: $(grep -E "tests passed|No tests were found" "$RESULTS/ctest.log" | tail -1 || echo "no result line")"
  if [[ $CTEST_OK == 1 ]]; then note "$CTEST_LINE ($(elapsed))"; else fail "$CTEST_LINE -- FAILED ($(elapsed))"; fi
else
  fail "$CTEST_LINE"
fi

# ---- examples ------------------------------------------------------------------------
: > "$RESULTS/run.log"
for ex in quickstart attention_block custom_elementwise/custom_elementwise; do
  EX="$BUILD_DIR/examples/$ex"
  if [[ -x "$EX" ]]; then
    echo "### $EX" >> "$RESULTS/run.log"
    if timeout 120 "$EX" >> "$RESULTS/run.log" 2>&1; then note "$ex: ok"
    else fail "$ex: FAILED (rc=$?), see run.log"; fi
  else
    note "$ex: not built"
  fi
done
# The training example on the GPU (bf16, f32 master weights); word-split TRAIN_ARGS.
TG="$BUILD_DIR/examples/train_gpt/train_gpt"
if [[ -x "$TG" ]]; then
  echo "### $TG --device cuda $TRAIN_ARGS" >> "$RESULTS/run.log"
  # shellcheck disable=SC2086
  if timeout 300 "$TG" --device cuda $TRAIN_ARGS >> "$RESULTS/run.log" 2>&1; then note "train_gpt: ok ($(elapsed))"
  else fail "train_gpt: FAILED (rc=$?), see run.log"; fi
else
  note "train_gpt: not built"
fi

# ---- benchmarks ------------------------------------------------------------------------
# One family at a time: bench/baracuda_bench --family F, then bench/torch_bench.py
# --family F (PyTorch, same case names) and bench/compare.py, all into
# $BENCH_OUT; everything is packed into bench.tgz (the results folder may hold
# only a few files).
BENCH_OUT="$(mkdir -p "$BUILD_DIR" && cd "$BUILD_DIR" && pwd)/bench-results"
if [[ "$BENCH" == 1 ]]; then
  rm -rf "$BENCH_OUT"; mkdir -p "$BENCH_OUT"
  BB="$BUILD_DIR/bench/baracuda_bench"
  BARGS=()
  [[ -n "$BENCH_FILTER" ]] && BARGS+=(--filter "$BENCH_FILTER")
  [[ -n "$BENCH_ITERS" ]] && BARGS+=(--iters "$BENCH_ITERS")
  for SET in $BENCH_SET; do
    case "$SET" in
      reduce|rope|gemm|softmax|norm|indexing|loss|random|random_sampling|optim|attention_paged) FAMILY=$SET ;;
      attn|attention) FAMILY=attention ;;
      ew|elementwise) FAMILY=elementwise ;;
      *) fail "bench: unknown set $SET"; continue ;;
    esac
    if [[ ! -x "$BB" ]]; then fail "bench $SET: $BB not built"; continue; fi
    echo "### $BB --family $FAMILY ${BARGS[*]}" >> "$RESULTS/run.log"
    # rc 3 = ran, but some cases failed (listed in the JSON)
    if "$BB" --family "$FAMILY" --json "$BENCH_OUT/${SET}_ours.json" "${BARGS[@]}" 2>&1 | tee -a "$RESULTS/run.log"; then
      note "bench $SET ours: ok ($(elapsed))"
    else fail "bench $SET ours: FAILED or some cases failed (rc=${PIPESTATUS[0]}) ($(elapsed))"; fi
    [[ -f "$BENCH_OUT/${SET}_ours.json" ]] || continue
    # PyTorch side by side, in the same run.
    python3 bench/torch_bench.py --family "$FAMILY" --json "$BENCH_OUT/${SET}_torch.json" "${BARGS[@]}" \
      >> "$RESULTS/run.log" 2>&1 || note "bench $SET torch: some cases failed or no torch"
    python3 bench/compare.py "$BENCH_OUT/${SET}_ours.json" "$BENCH_OUT/${SET}_torch.json" \
      --markdown "$BENCH_OUT/${SET}_compare.md" --out "$BENCH_OUT/${SET}_results.json" >> "$RESULTS/run.log" 2>&1 \
      || fail "compare $SET: FAILED"
    note "bench $SET torch + compare: done ($(elapsed))"
    # packed after every set, so a run stopped by a time limit keeps what finished
    tar -C "$BENCH_OUT" -czf "$RESULTS/bench.tgz" .
  done
  note "bench results: $RESULTS/bench.tgz"
fi

# ---- summary (last, so it is what the tail of the output shows) -----------------------
echo
echo "======================== summary ($(elapsed)) ========================"
printf '%s\n' "${SUMMARY[@]}"
if [[ -f "$RESULTS/ctest.log" ]] && grep -q "The following tests FAILED" "$RESULTS/ctest.log"; then
  sed -n '/The following tests FAILED/,$p' "$RESULTS/ctest.log" | head -40
fi
if [[ "$BENCH" == 1 ]]; then
  for SET in $BENCH_SET; do
    case "$SET" in
      attn|attention) [[ -f "$BENCH_OUT/${SET}_compare.md" ]] && cat "$BENCH_OUT/${SET}_compare.md" ;;
      *) [[ -f "$BENCH_OUT/${SET}_ours.json" ]] && python3 bench/compare.py "$BENCH_OUT/${SET}_ours.json" \
           "$BENCH_OUT/${SET}_torch.json" --summary-only || true ;;
    esac
  done
fi
echo "results in $RESULTS:" "$(cd "$RESULTS" && printf '%s ' *)"
exit "$FAILED"
