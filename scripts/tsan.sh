#!/usr/bin/env bash
# ThreadSanitizer run of the tests whose own code (std::thread, mutexes, atomics, caches shared
# between threads) runs on several threads at once:
#   - many ExecutionContexts of one Engine on 4 threads (BuilderTest.ContextsRunConcurrently),
#   - CPU kernels sharing their cached oneDNN primitives / packed weights across threads
#     (NnKernelsConv.EmptyBatchAndConcurrentCalls, QlinearKernels.ConcurrentRunsAgree),
#   - the ImageBatcher's decode workers and prefetch queue (ImageBatcherTest.*, 1-8 threads),
#     also through the CLI (GenerateCalibrationTest.*: --threads 2) and its interrupt cleanup
#     (InterruptTest.*: SIGINT/SIGTERM while worker threads write).
#   scripts/tsan.sh [more gtest flags, e.g. --gtest_repeat=3]
# Builds build-tsan (RelWithDebInfo, -fsanitize=thread, warnings as errors, CUDA off: nvcc does
# not take -fsanitize=thread and no GPU code is tested here), target trtutils_tests only (it
# brings the CLI the CLI tests run). Exits non-zero on any test failure or TSan report; every
# report (of the test binary or of a CLI it starts) is written to build-tsan/tsan-logs/ and
# printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TRTUTILS_TSAN_BUILD:-build-tsan}

# GCC's flow-based warnings give false positives under sanitizer instrumentation (as in the
# ASan build, CMakeLists.txt); -Wtsan only says that TSan ignores atomic_thread_fence.
cxx_flags="-fsanitize=thread -fno-omit-frame-pointer -Wno-error=maybe-uninitialized"
cxx_flags+=" -Wno-error=stringop-overflow -Wno-error=array-bounds -Wno-error=restrict"
[[ ${CXX:-g++} == *clang* ]] || cxx_flags+=" -Wno-tsan"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRTUTILS_WERROR=ON \
  -DTRTUTILS_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
  -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
nice -n 5 cmake --build "$build" -j"${TSAN_BUILD_JOBS:-2}" --target trtutils_tests

tests=BuilderTest.ContextsRunConcurrently
tests+=:NnKernelsConv.EmptyBatchAndConcurrentCalls:QlinearKernels.ConcurrentRunsAgree
tests+=:ImageBatcherTest.*:GenerateCalibrationTest.*:*InterruptTest.*

logs=$build/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# OpenMP: libgomp (and oneDNN, which runs on it) is not built with TSan, so TSan cannot see the
# synchronisation of its thread team (barriers on futexes) and would report every parallel loop.
# One OpenMP thread per team keeps libgomp from starting threads; the threads under test are our
# own std::threads (4 contexts, up to 8 image decoders), which each still run their kernels.
export OMP_NUM_THREADS=1
# log_path: reports go to files, also those of the CLI processes the CLI tests start (their
# stderr is captured by the tests); halt_on_error: stop at the first race.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 log_path=$PWD/$logs/tsan"
status=0
"$build/bin/trtutils_tests" --gtest_filter="$tests" "$@" 2>&1 | tee "$build/tsan-run.log" ||
  status=$?
reports=$(find "$logs" -type f | wc -l)
if ((reports > 0)); then
  for f in "$logs"/*; do
    echo "==== $f"
    cat "$f"
  done
  echo "tsan: $reports TSan report file(s) in $logs" >&2
  exit 1
fi
passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$build/tsan-run.log" | tail -1)
echo "tsan: ${passed:-0} tests passed, no TSan report (exit status $status)"
exit "$status"
