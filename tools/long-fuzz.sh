#!/usr/bin/env bash
# The contract fuzz of every plan for a long budget, under AddressSanitizer +
# UndefinedBehaviorSanitizer, in a CPU-only build (the fuzz drives the CPU
# plans; DESIGN.md §1 and tests/contract/fuzz.hpp).
#
#   RESULTS=$OUT FUZZ_SECONDS=1800 tools/long-fuzz.sh
#
# Knobs (environment):
#   RESULTS         output folder (default ./fuzz-results): fuzz-build.log,
#                   fuzz-<plan>-<seed>.log per run, fuzz-summary.txt
#   BUILD_DIR       build folder (default build-fuzz; configured from scratch)
#   FUZZ_SECONDS    wall budget of each run (default 60)
#   SEEDS           runs per plan, each with its own BARACUDA_FUZZ_SEED (default 1)
#   SEED_BASE       first seed (default 1); runs use SEED_BASE, SEED_BASE+1, ...
#   PLANS           plans to fuzz (default: all nine)
# All runs go in parallel (one process each); the summary lists every run's
# cases, CPU seconds and verdict. Exit status non-zero when any run failed.
set -euo pipefail

RESULTS=${RESULTS:-./fuzz-results}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
SEEDS=${SEEDS:-1}
SEED_BASE=${SEED_BASE:-1}
PLANS=${PLANS:-"ReducePlan ReduceBackwardPlan ReduceToPlan SdpaPlan SdpaBackwardPlan FlashSdpaPlan FlashSdpaBackwardPlan RopePlan RopeBackwardPlan"}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
rm -rf "$BUILD_DIR"
{
  cmake -S . -B "$BUILD_DIR" -G Ninja -DBARACUDA_CUDA=OFF -DBARACUDA_BUILD_BENCH=OFF -DBARACUDA_BUILD_EXAMPLES=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san"
  cmake --build "$BUILD_DIR" --target baracuda_cpu_tests
} > "$RESULTS/fuzz-build.log" 2>&1 || { echo "fuzz build failed (fuzz-build.log)"; tail -30 "$RESULTS/fuzz-build.log"; exit 1; }

bin="$BUILD_DIR/tests/baracuda_cpu_tests"
pids=()
names=()
for plan in $PLANS; do
  for ((i = 0; i < SEEDS; ++i)); do
    seed=$((SEED_BASE + i))
    log="$RESULTS/fuzz-$plan-$seed.log"
    ( export BARACUDA_FUZZ_SECONDS=$FUZZ_SECONDS BARACUDA_FUZZ_SEED=$seed
      rc=0
      "$bin" --gtest_filter="*/PlanContract/$plan.FuzzDescriptorsAndViews" > "$log" 2>&1 || rc=$?
      echo "cpu (children user, sys): $(times | tail -1)" >> "$log"
      exit $rc ) &
    pids+=($!)
    names+=("$plan seed $seed")
  done
done
failed=0
{
  echo "fuzz: ${#pids[@]} runs of ${FUZZ_SECONDS}s on $(nproc) cores, ASan+UBSan, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then verdict=ok; else verdict=FAILED; failed=1; fi
    log="$RESULTS/fuzz-${names[$i]% seed*}-${names[$i]##* }.log"
    printf '%-34s %-6s %s | %s\n' "${names[$i]}" "$verdict" "$(grep -h '^\[ fuzz' "$log" | head -1)" "$(grep -h '^cpu (children' "$log")"
  done
} | tee "$RESULTS/fuzz-summary.txt"
exit $failed
