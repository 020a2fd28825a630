#!/usr/bin/env bash
# Runs every GPU gtest matching FILTER as its own process, PAR at a time, each under PER_TEST_S
# seconds, so that a hang costs one test and names it (the first GPU run of CudaResize.Cubic* hung
# and took the 35 tests after it down). Output: $OUT/gtest_each.log (one line per test: PASS,
# FAIL, SKIP or HANG) and $OUT/gtest/<test>.log. Run from the repo root after dist/ is unpacked:
#   FILTER='Cuda*' PAR=4 PER_TEST_S=90 bash bench/cuda/gtest_each.sh
set -uo pipefail
out="${OUT:-$PWD/device-results}"
bin="${TESTS_BIN:-dist/bin/trtutils_tests}"
# The tests that run the CLI (cli_runner.h) find it next to the test binary, not at the build
# machine's path.
export TRTUTILS_TEST_CLI="${TRTUTILS_TEST_CLI:-$PWD/$(dirname "$bin")/trtutils}"
mkdir -p "$out/gtest"
"$bin" --gtest_list_tests --gtest_filter="${FILTER:-Cuda*}" | awk '
  /^[^ ]/ {suite=$1; next}
  /^  / {print suite $1}' >"$out/gtest/list.txt"
one() {
  local t="$1" log="$out/gtest/$1.log" rc
  timeout "${PER_TEST_S:-90}" "$bin" --gtest_filter="$t" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then echo "HANG $t"
  elif grep -q '^\[  SKIPPED \] 1 test' "$log"; then echo "SKIP $t"
  elif [ $rc -eq 0 ]; then echo "PASS $t"
  else echo "FAIL $t (exit $rc)"; fi
}
export -f one
export out bin PER_TEST_S
xargs -a "$out/gtest/list.txt" -P "${PAR:-4}" -I{} bash -c 'one "$@"' _ {} | sort >"$out/gtest_each.log"
echo "gtest_each: $(wc -l <"$out/gtest/list.txt") tests:" \
  "$(grep -c ^PASS "$out/gtest_each.log") pass, $(grep -c ^FAIL "$out/gtest_each.log") fail," \
  "$(grep -c ^SKIP "$out/gtest_each.log") skip, $(grep -c ^HANG "$out/gtest_each.log") hang"
grep -E '^(FAIL|HANG)' "$out/gtest_each.log"
