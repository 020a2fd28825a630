#!/usr/bin/env bash
# Issue 30's checks and timings on the GPU machine, one call (binaries from scripts/make_dist.sh
# in dist/):
#   1. the GPU unit tests of detectors and images (Cuda*, GpuFallback*, Detector*, DetectCli*,
#      DeviceStatus*) -> gtest.log (summary lines);
#   2. tests/e2e/yolo_nms_e2e.py --backend cuda (build_yolo engines against batched_nms);
#   3. unless SKIP_BENCH=1: bench/cuda/yolo_bench.py (BATCHES, PRECISIONS, ITERATIONS) -> yolo.jsonl;
#   4. `detect` of the bundled photos with the bench's fp16 engine -> one annotated PNG.
# Results in $OUT (or ./device-results): summary.txt, yolo.jsonl, photo.png.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out" /tmp/d
tar -C /tmp/d -xJf dist/trtutils-dist.tar.xz
export LD_LIBRARY_PATH=/tmp/d/lib:/usr/local/cuda/lib64
bin=/tmp/d/bin
{
  echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "== unit tests"
  "$bin/trtutils_tests" --gtest_filter='Cuda*:GpuFallback*:Detector*:DeviceStatus*' \
    >/tmp/gtest.log 2>&1
  echo "rc $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED  \]" /tmp/gtest.log | head -40
  echo "== yolo e2e (cuda)"
  python3 tests/e2e/yolo_nms_e2e.py --trtutils "$bin/trtutils" --backend cuda 2>&1 | tail -8
} >"$out/summary.txt" 2>&1
if [ "${SKIP_BENCH:-0}" != "1" ]; then
  python3 bench/cuda/yolo_bench.py --trtutils "$bin/trtutils" --out /tmp/yolo \
    --batches "${BATCHES:-1,32}" --precisions "${PRECISIONS:-fp16,int8,int8_qdq}" \
    --iterations "${ITERATIONS:-100}" >"$out/yolo.jsonl" 2>>"$out/summary.txt"
  eng=$(ls /tmp/yolo/b1_fp16.engine 2>/dev/null || ls /tmp/yolo/*fp16.engine | head -1)
  "$bin/trtutils" detect --engine "$eng" --input tests/data/images/photo_astronaut.png tests/data/images/photo_coffee.png --output /tmp/photos \
    >>"$out/summary.txt" 2>&1
  cp /tmp/photos/photo_astronaut.png "$out/photo.png"
fi
cat "$out/summary.txt"
