#!/usr/bin/env bash
# Issue 29's zoo run on the GPU machine, in one device call: unpacks dist/ (scripts/make_dist.sh),
# optionally runs a GPU gtest filter first, then bench/cuda/zoo_gpu.py with the arguments given,
# results into $OUT (zoo.json, zoo.log, gtest.log); RESUME=FILE starts from an earlier call's
# zoo.json. Run from the repo root:
#   GTEST_FILTER='Cuda*' bash bench/cuda/zoo_device.sh --kinds cls --workers 6 --budget_s 420 --ort
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
dist="${DIST:-dist}"
mkdir -p "$out"
[ -x "$dist/bin/trtutils" ] || tar -C "$dist" -xJf "$dist/trtutils-dist.tar.xz"
export LD_LIBRARY_PATH="$PWD/$dist/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
export TRTUTILS_TEST_CLI="$PWD/$dist/bin/trtutils"  # the tests that run the CLI (cli_runner.h)
if [ -n "${GTEST_FILTER:-}" ]; then
  timeout "${GTEST_TIMEOUT:-300}" "$dist/bin/trtutils_tests" --gtest_filter="$GTEST_FILTER" \
    >"$out/gtest.log" 2>&1
  echo "gtest ($GTEST_FILTER): exit $?"
  grep -E "^\[  FAILED  \]|^\[  PASSED  \]|^\[  SKIPPED \]|tests ran" "$out/gtest.log" | tail -30
fi
if [ "$#" -gt 0 ]; then
  [ -n "${RESUME:-}" ] && cp "$RESUME" "$out/zoo.json"  # an earlier call's rows: skipped
  python3 bench/cuda/zoo_gpu.py --trtutils "$dist/bin/trtutils" --out /tmp/zoo \
    --json "$out/zoo.json" "$@" 2>&1 | tee "$out/zoo.log"
fi
