#!/usr/bin/env bash
# CPU engines (ResNet-50 batch 8 unless --model names another export of tests/e2e/export_models.py,
# 224 x 224 inputs, batch 8 for NAME_b8, else 1): our FP32 engine and our INT8 engine (strongly typed, from
# `trtutils quantize` int8 entropy on 64 real-photo crops) against ONNX Runtime (onnxruntime-node,
# graph optimization 'all') on the float model and on the same Q/DQ model, same threads, same
# seeded input, interleaved in one run. Prints medians and ratios.
#
#   bench/engine_cpu.sh [--model NAME] [--threads N] [--iterations N] [--warmup N]
#
# Environment: TRTUTILS_BIN (default build/bin/trtutils), TRTUTILS_MODEL_CACHE.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E="$ROOT/tests/e2e"
PY=/usr/bin/python3
TRTUTILS_BIN="${TRTUTILS_BIN:-$ROOT/build/bin/trtutils}"
CACHE="${TRTUTILS_MODEL_CACHE:-$HOME/.cache/trtutils/models}"
THREADS=$(nproc)
ITERS=20
WARMUP=3
NAME=resnet50_b8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --iterations) ITERS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --model) NAME="$2"; shift 2 ;;
    *) echo "usage: $0 [--model NAME] [--threads N] [--iterations N] [--warmup N]" >&2; exit 2 ;;
  esac
done
[[ -x "$TRTUTILS_BIN" ]] || { echo "trtutils CLI not found at $TRTUTILS_BIN" >&2; exit 2; }
[[ -d "$E2E/node_modules/onnxruntime-node" ]] || (cd "$E2E" && npm ci --no-audit --no-fund) >&2
"$PY" "$E2E/export_models.py" --cache "$CACHE" "$NAME" 2> >(grep -v -i warning >&2)
MODEL="$CACHE/$NAME.onnx"
BATCH=1
[[ "$NAME" == *_b8 ]] && BATCH=8
WORK="$(mktemp -d -t trtutils_engbench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
"$PY" "$E2E/quantize_calib_photos.py" "$WORK/calib.npy" --count 64 --size 224 --seed 0 >/dev/null
"$PY" -c "
import numpy as np, sys
b = int(sys.argv[2])
np.save(sys.argv[1], np.random.default_rng(0).standard_normal((b, 3, 224, 224)).astype(np.float32))
" "$WORK/input.npy" "$BATCH"

echo "model: $MODEL (batch $BATCH), threads: $THREADS, iterations: $ITERS, warmup: $WARMUP"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) logical cores)"
"$TRTUTILS_BIN" quantize --onnx "$MODEL" --output "$WORK/int8.onnx" --calibration_data "$WORK/calib.npy" \
  --quantize_mode int8 --calibration_method entropy --batch_size "$BATCH" --threads "$THREADS" >/dev/null 2>&1
"$TRTUTILS_BIN" build --onnx "$MODEL" --output "$WORK/fp32.engine" >/dev/null 2>&1
"$TRTUTILS_BIN" build --onnx "$WORK/int8.onnx" --output "$WORK/int8.engine" --strongly_typed >/dev/null 2>&1
"$TRTUTILS_BIN" inspect --engine "$WORK/int8.engine" | sed -n 's/^layers: /  int8 engine layers: /p'

bench_ours() {
  "$TRTUTILS_BIN" benchmark --engine "$1" --input "input=$WORK/input.npy" --iterations "$ITERS" \
    --warmup_iterations "$WARMUP" --threads "$THREADS" | sed -n 's/.*median \([0-9.]*\).*/\1/p' | head -n1
}
bench_ort() {
  (cd "$E2E" && ORT_NUM_THREADS="$THREADS" node ort_run.mjs "$1" - "input=$WORK/input.npy" --opt all \
    --iterations "$ITERS" --warmup "$WARMUP") | sed -n "s/.*median_ms=\([0-9.]*\).*/\1/p" | head -n1
}
fp32=$(bench_ours "$WORK/fp32.engine")
int8=$(bench_ours "$WORK/int8.engine")
ort32=$(bench_ort "$MODEL")
ort8=$(bench_ort "$WORK/int8.onnx")
printf 'median ms: trtutils fp32 engine %s | trtutils int8 engine %s | ORT fp32 %s | ORT int8 Q/DQ %s\n' \
  "$fp32" "$int8" "$ort32" "$ort8"
"$PY" -c "
import sys; f, i, o, q = map(float, sys.argv[1:5])
print(f'int8 engine vs our fp32 engine: {f / i:.2f}x faster; ours vs ORT: fp32 {f / o:.2f}x time, int8 {i / q:.2f}x time')
" "$fp32" "$int8" "$ort32" "$ort8"
