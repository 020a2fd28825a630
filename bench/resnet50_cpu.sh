#!/usr/bin/env bash
# ResNet-50, batch 8, FP32, CPU: trtutils vs ONNX Runtime (onnxruntime-node) at the same thread
# count on the same seeded input. Prints both medians, the ratio and the peak RSS of one
# `trtutils run` (load + one inference).
#
#   bench/resnet50_cpu.sh [--threads N] [--iterations N] [--warmup N] [--ort-opt LEVEL]
#
# Environment: TRTUTILS_BIN (default build/bin/trtutils), TRTUTILS_MODEL_CACHE (exported models,
# default ~/.cache/trtutils/models). ORT's graphOptimizationLevel defaults to 'all' here (its best
# case); pass --ort-opt basic to compare against the e2e configuration.
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
ORT_OPT=all
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --iterations) ITERS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --ort-opt) ORT_OPT="$2"; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--iterations N] [--warmup N] [--ort-opt LEVEL]" >&2; exit 2 ;;
  esac
done

[[ -x "$TRTUTILS_BIN" ]] || { echo "trtutils CLI not found at $TRTUTILS_BIN (set TRTUTILS_BIN)" >&2; exit 2; }
if [[ ! -d "$E2E/node_modules/onnxruntime-node" ]]; then
  (cd "$E2E" && npm ci --no-audit --no-fund) >&2
fi

mkdir -p "$CACHE"
"$PY" "$E2E/export_models.py" --cache "$CACHE" resnet50_b8 2> >(grep -v -i warning >&2)
MODEL="$CACHE/resnet50_b8.onnx"
WORK="$(mktemp -d -t trtutils_bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
"$PY" -c "
import numpy as np, sys
np.save(sys.argv[1], np.random.default_rng(0).standard_normal((8, 3, 224, 224)).astype(np.float32))
" "$WORK/input.npy"

echo "model: $MODEL (batch 8, fp32), threads: $THREADS, iterations: $ITERS, warmup: $WARMUP"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) logical cores)"

# ---- trtutils ----
if "$TRTUTILS_BIN" benchmark --help >/dev/null 2>&1; then
  trt_out=$("$TRTUTILS_BIN" benchmark --onnx "$MODEL" --input "input=$WORK/input.npy" \
    --iterations "$ITERS" --warmup "$WARMUP" --threads "$THREADS")
  echo "$trt_out" | sed 's/^/  trtutils: /'
  trt_median=$(echo "$trt_out" | sed -n 's/.*median \([0-9.]*\).*/\1/p' | head -n1)
else
  # No benchmark subcommand: wall clock of whole `trtutils run` processes (includes model load).
  echo "  trtutils: no 'benchmark' subcommand; timing whole 'trtutils run' processes (incl. load)"
  times=()
  for ((i = 0; i < WARMUP + ITERS; i++)); do
    t0=$(date +%s%N)
    "$TRTUTILS_BIN" run --onnx "$MODEL" --input "input=$WORK/input.npy" --output_dir "$WORK/out" \
      --threads "$THREADS" >/dev/null
    t1=$(date +%s%N)
    ((i >= WARMUP)) && times+=("$(((t1 - t0) / 1000))")
  done
  trt_median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.3f", m / 1000}')
fi

# ---- ONNX Runtime ----
ort_out=$(cd "$E2E" && node ort_run.mjs "$MODEL" - "input=$WORK/input.npy" --threads "$THREADS" \
  --iterations "$ITERS" --warmup "$WARMUP" --opt "$ORT_OPT")
echo "$ort_out" | sed 's/^/  /'
ort_median=$(echo "$ort_out" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' | head -n1)

# ---- peak RSS of one `trtutils run` ----
rss_kb=""
if [[ -x /usr/bin/time ]]; then
  rss_kb=$(/usr/bin/time -v "$TRTUTILS_BIN" run --onnx "$MODEL" --input "input=$WORK/input.npy" \
    --output_dir "$WORK/out" --threads "$THREADS" 2>&1 >/dev/null |
    sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p')
else
  # /proc fallback: poll VmHWM while the process runs.
  "$TRTUTILS_BIN" run --onnx "$MODEL" --input "input=$WORK/input.npy" --output_dir "$WORK/out" \
    --threads "$THREADS" >/dev/null &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    v=$(sed -n 's/^VmHWM:\s*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n "$v" ]] && rss_kb=$v
    sleep 0.05
  done
  wait "$pid"
fi

echo
printf 'trtutils median: %s ms\n' "$trt_median"
printf 'ORT median:      %s ms (graphOptimizationLevel=%s)\n' "$ort_median" "$ORT_OPT"
awk -v a="$trt_median" -v b="$ort_median" 'BEGIN { printf "ratio trtutils/ORT: %.2fx (%s)\n", a / b, (a <= b ? "trtutils faster or equal" : "ORT faster") }'
[[ -n "$rss_kb" ]] && awk -v k="$rss_kb" 'BEGIN { printf "trtutils run peak RSS: %.1f MiB\n", k / 1024 }'
exit 0
