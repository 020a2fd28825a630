#!/usr/bin/env bash
# The whole test suite. Warnings are errors; sources must be clang-formatted.
#   1. an ASan + UBSan build runs the unit tests, ONNX's own backend tests and the fuzz harnesses
#      (tests/fuzz) once over their seed corpora (replayed without libFuzzer: tests/fuzz/replay.cmake;
#      scripts/fuzz.sh builds them with clang's libFuzzer for fuzzing sessions);
#      the packaging tests (label packaging: install, downstream project, .deb) run in 2. only;
#   2. the release build runs everything: unit tests, ONNX backend conformance, and the
#      end-to-end comparisons with ONNX Runtime on torchvision models (plain and quantized).
# Extra arguments go to the final ctest (e.g. -L unit). Prints ctest's summary, then pytest's (the
# Python package's suite, ctest test python_api).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/format.sh --check
jobs=$(nproc)

# -O1 with line tables only (what the sanitizers' reports need) compiles twice as fast as -O2 -g
# (measured on tools/cli/cmd_inspect.cpp: 21 s against 43 s); the tests run a little slower.
# It has no CUDA backend (TRTUTILS_CUDA=OFF): no GPU runs its kernels here, and the CUDA backend's
# host code that runs without a device (the builder's GPU coverage and fusion plans) is tested by
# the release build below, which assembles every kernel for sm_90a. (Session 21: this phase took
# 1,313 s of CI's ~2,000 with the CUDA backend in.)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRTUTILS_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DTRTUTILS_SANITIZE=ON -DTRTUTILS_BUILD_BENCH=OFF -DTRTUTILS_CUDA=OFF
cmake --build build-asan -j"$jobs"
(cd build-asan && ctest --output-on-failure -j"$jobs" --timeout 900 -LE "e2e|packaging")
echo "[test.sh] sanitizer build and tests done at ${SECONDS} s"

# One CUDA architecture in both builds keeps CI within its time (every .cu is compiled once per
# architecture); the default list is for users' builds (scripts/setup.sh).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRTUTILS_WERROR=ON \
  -DTRTUTILS_CUDA_ARCHS="${TRTUTILS_CUDA_ARCHS:-90a-real}"
cmake --build build -j"$jobs"
echo "[test.sh] release build done at ${SECONDS} s"
cd build
status=0
ctest --output-on-failure -j"$jobs" --timeout 1800 "$@" || status=$?
# The Python package's pytest summary (ctest test python_api), after ctest's own.
pytest_line=$(grep -E "^=* ?[0-9]+ (passed|failed)|^[0-9]+ (passed|failed)" Testing/Temporary/LastTest.log | tail -1 || true)
[ -n "$pytest_line" ] && echo "[test.sh] pytest (python_api): ${pytest_line}"
echo "[test.sh] done at ${SECONDS} s"
exit "$status"
