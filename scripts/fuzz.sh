#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz for N seconds each, one after the other (niced):
#   scripts/fuzz.sh <harness|all> <seconds> [more libFuzzer flags]
#   harnesses: onnx npy calibration_cache image cli engine build cli_numbers
# Builds build-fuzz-clang (clang-14, TRTUTILS_FUZZ=ON) first if needed. New corpus entries go to
# build-fuzz-clang/corpus/<harness>/ (the seeds in tests/fuzz/corpus/ are only read); crashes,
# leaks, timeouts and OOMs to build-fuzz-clang/crashes/<harness>/ (reproduce with
# build-fuzz-clang/bin/<harness>_fuzz <file>). Exits 1 if any harness found something.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
what=$1
seconds=$2
shift 2
build=${TRTUTILS_FUZZ_BUILD:-build-fuzz-clang}

all=(onnx npy calibration_cache image cli engine build cli_numbers)
if [[ $what == all ]]; then
  harnesses=("${all[@]}")
else
  [[ " ${all[*]} " == *" $what "* ]] || { echo "unknown harness '$what' (${all[*]} or all)" >&2; exit 2; }
  harnesses=("$what")
fi

# Per harness: the largest input (bytes; a bit over the largest seed) and the memory limit (MiB).
# Decoders may allocate up to the 512 MiB an image of kMaxImagePixels RGBA takes.
max_len() {
  case $1 in
    onnx | engine | build) echo 32768 ;; image) echo 16384 ;; npy | calibration_cache) echo 4096 ;;
    cli) echo 1024 ;; cli_numbers) echo 66 ;;
  esac
}
rss_limit() { case $1 in image) echo 4096 ;; *) echo 2560 ;; esac; }

if [ ! -f "$build/build.ninja" ]; then
  CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S . -B "$build" -G Ninja -DTRTUTILS_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRTUTILS_BUILD_BENCH=OFF
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("${h}_fuzz"); done
nice -n 10 cmake --build "$build" -j"${FUZZ_BUILD_JOBS:-2}" --target "${targets[@]}"

status=0
summary=()
for h in "${harnesses[@]}"; do
  mkdir -p "$build/corpus/$h" "$build/crashes/$h"
  log=$build/fuzz-$h.log
  echo "== $h: ${seconds}s, -max_len=$(max_len "$h") -rss_limit_mb=$(rss_limit "$h"), log $log"
  rc=0
  nice -n 10 "$build/bin/${h}_fuzz" "$build/corpus/$h" "tests/fuzz/corpus/$h" \
    -max_total_time="$seconds" -max_len="$(max_len "$h")" -rss_limit_mb="$(rss_limit "$h")" \
    -timeout=30 -artifact_prefix="$build/crashes/$h/" -print_final_stats=1 "$@" >"$log" 2>&1 ||
    rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  line="$h: ${execs:-?} execs, ${rate:-?} execs/s, ${cov:-cov ?}, corpus $(ls "$build/corpus/$h" | wc -l) new"
  if ((rc != 0)); then
    status=1
    line+=" -- FOUND A PROBLEM (exit $rc): $(ls -t "$build/crashes/$h" | head -1)"
    grep -m3 -E 'ERROR: |runtime error|invariant broken|==ERROR' "$log" >&2 || true
  fi
  summary+=("$line")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
