#!/usr/bin/env bash
# The contract fuzz of every plan for a long budget, under AddressSanitizer +
# UndefinedBehaviorSanitizer, in a CPU-only build (the fuzz drives the CPU
# plans; DESIGN.md §1 and tests/contract/fuzz.hpp).
#
#   RESULTS=$OUT FUZZ_SECONDS=1800 tools/long-fuzz.sh
#
# Knobs (environment):
#   RESULTS         output folder (default ./fuzz-results): fuzz-build.log,
#                   fuzz-summary.txt (with the tail of every failed run's log),
#                   fuzz-logs.tgz (fuzz-<plan>-<seed>.log of every run)
#   BUILD_DIR       build folder (default build-fuzz; configured from scratch)
#   BUILD           1 (default): configure + build; 0: use BUILD_DIR as it is
#   FUZZ_SECONDS    wall budget of each run (default 60)
#   SEEDS           runs per plan, each with its own BARACUDA_FUZZ_SEED (default 1)
#   SEED_BASE       first seed (default 1); runs use SEED_BASE, SEED_BASE+1, ...
#   PLANS           plans to fuzz (default: every plan in the contract suite)
# All runs go in parallel (one process each); the summary lists every run's
# cases, CPU seconds and verdict. Exit status non-zero when any run failed.
set -euo pipefail

RESULTS=${RESULTS:-./fuzz-results}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
SEEDS=${SEEDS:-1}
SEED_BASE=${SEED_BASE:-1}
BUILD=${BUILD:-1}
PLANS=${PLANS:-"ReducePlan ReduceBackwardPlan ReduceToPlan SdpaPlan SdpaBackwardPlan FlashSdpaPlan FlashSdpaBackwardPlan RopePlan RopeBackwardPlan UnaryPlan BinaryPlan TernaryPlan UnaryBackwardPlan BinaryBackwardPlan TernaryBackwardPlan FactoryPlan MatmulPlan LinearPlan LinearBackwardPlan"}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

# float-cast-overflow: a float -> integer conversion out of range (undefined
# behaviour) is not part of GCC's -fsanitize=undefined (contract finding EW2).
san="-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow"
[ "$BUILD" = 1 ] && rm -rf "$BUILD_DIR"
[ "$BUILD" = 1 ] && {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DBARACUDA_CUDA=OFF -DBARACUDA_BUILD_BENCH=OFF -DBARACUDA_BUILD_EXAMPLES=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san"
  cmake --build "$BUILD_DIR" --target baracuda_cpu_tests
} > "$RESULTS/fuzz-build.log" 2>&1 || { [ "$BUILD" = 1 ] && { echo "fuzz build failed (fuzz-build.log)"; tail -30 "$RESULTS/fuzz-build.log"; exit 1; }; }

bin="$BUILD_DIR/tests/baracuda_cpu_tests"
# Runs one fuzz process and appends its CPU seconds (user + sys) to the log.
run_one() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
log, cmd = sys.argv[1], sys.argv[2:]
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(log, "a") as f:
    f.write("cpu_seconds %.1f (user %.1f, sys %.1f), exit %d\n" % (r.ru_utime + r.ru_stime, r.ru_utime, r.ru_stime, rc))
sys.exit(0 if rc == 0 else 1)
PY
}
pids=()
names=()
logs=()
for plan in $PLANS; do
  for ((i = 0; i < SEEDS; ++i)); do
    seed=$((SEED_BASE + i))
    log="$RESULTS/fuzz-$plan-$seed.log"
    BARACUDA_FUZZ_SECONDS=$FUZZ_SECONDS BARACUDA_FUZZ_SEED=$seed \
      run_one "$log" "$bin" --gtest_filter="$plan/PlanContract/*.FuzzDescriptorsAndViews" &
    pids+=($!)
    names+=("$plan seed $seed")
    logs+=("$log")
  done
done
failed=0
summary="$RESULTS/fuzz-summary.txt"
echo "fuzz: ${#pids[@]} runs of ${FUZZ_SECONDS}s on $(nproc) cores, ASan+UBSan, $(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$summary"
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then verdict=ok; else verdict=FAILED; failed=1; fi
  printf '%-30s %-6s %s | %s\n' "${names[$i]}" "$verdict" "$(grep -h '^\[ fuzz' "${logs[$i]}" | head -1)" \
    "$(grep -h '^cpu_seconds' "${logs[$i]}")" >> "$summary"
  if [ "$verdict" = FAILED ]; then
    { echo "---- tail of ${logs[$i]##*/}"; tail -40 "${logs[$i]}"; echo "----"; } >> "$summary"
  fi
done
tar -czf "$RESULTS/fuzz-logs.tgz" -C "$RESULTS" $(cd "$RESULTS" && ls fuzz-*.log) && rm -f "$RESULTS"/fuzz-*.log
cat "$summary"
exit $failed
