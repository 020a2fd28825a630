#!/usr/bin/env bash
# OpenMP spin-waiting under contention (issues 33, 36): `benchmark` and `quantize` of the bundled
# tiny CNN (examples/tiny_cnn.onnx; benchmark: batch 128 of 3x32x32; quantize: int8 max
# calibration on 1,536 random samples, batch size 1) with --threads 1 and --threads 0 (all
# cores), each with libgomp's default spin-wait (GOMP_SPINCOUNT=300000, its built-in value: what
# every run did before the CLI chose a policy), with OMP_WAIT_POLICY=PASSIVE (the CLI's default
# of issue 33) and with the CLI's choice now (nothing set: a 10,000-spin wait where every thread
# has a free core, else passive). With --hog, one `yes > /dev/null` competes for a core during the
# runs. With --small, benchmark only, at batch 1 (random input; ~0.1 ms per run): what passive
# waiting costs a model whose parallel regions are microseconds long. With --model M.onnx,
# benchmark only, of that model on random input.
# Rounds are interleaved; prints one line per run (median / p99 ms, or quantize wall seconds).
#
#   bench/wait_policy.sh [--hog] [--small | --model M.onnx] [--rounds N] [--iterations N]
#
# Environment: TRTUTILS_BIN (default build/bin/trtutils).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
TRTUTILS_BIN="${TRTUTILS_BIN:-$ROOT/build/bin/trtutils}"
HOG=0
SMALL=0
MODEL_ARG=""
ROUNDS=3
ITERS=100
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hog) HOG=1; shift ;;
    --small) SMALL=1; shift ;;
    --model) MODEL_ARG="$2"; SMALL=1; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --iterations) ITERS="$2"; shift 2 ;;
    *) echo "usage: $0 [--hog] [--small] [--rounds N] [--iterations N]" >&2; exit 2 ;;
  esac
done
[[ -x "$TRTUTILS_BIN" ]] || { echo "trtutils CLI not found at $TRTUTILS_BIN" >&2; exit 2; }

WORK="$(mktemp -d)"
HOG_PID=""
cleanup() {
  [[ -n "$HOG_PID" ]] && kill "$HOG_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
/usr/bin/python3 - "$WORK" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(0)
np.save(sys.argv[1] + "/input.npy", rng.random((128, 3, 32, 32), dtype=np.float32))
np.save(sys.argv[1] + "/calib.npy", rng.random((1536, 3, 32, 32), dtype=np.float32))
EOF
MODEL="${MODEL_ARG:-$ROOT/examples/tiny_cnn.onnx}"
if [[ $HOG == 1 ]]; then
  yes > /dev/null &
  HOG_PID=$!
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); hog: $HOG; $(nproc) cores"

# bench_one / quantize_one LABEL THREADS ENV_ARGS...: one run under `env ENV_ARGS...`.
bench_one() {
  local label="$1" threads="$2"; shift 2
  local line
  local input=(--input "input=$WORK/input.npy")
  [[ $SMALL == 1 ]] && input=()
  line=$(env "$@" "$TRTUTILS_BIN" benchmark --onnx "$MODEL" "${input[@]}" \
    --iterations "$ITERS" --warmup 5 --threads "$threads" 2>/dev/null | grep '^latency')
  local median p99
  median=$(sed -E 's/.*median ([0-9.]+).*/\1/' <<<"$line")
  p99=$(sed -E 's/.*p99 ([0-9.]+).*/\1/' <<<"$line")
  printf 'benchmark %-8s --threads %s: median %8s ms, p99 %8s ms\n' "$label" "$threads" "$median" "$p99"
}
quantize_one() {
  local label="$1" threads="$2"; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$TRTUTILS_BIN" quantize --onnx "$MODEL" --output "$WORK/q.onnx" \
    --calibration_data "$WORK/calib.npy" --batch_size 1 --threads "$threads" --no_report_file > /dev/null
  t1=$(date +%s.%N)
  printf 'quantize  %-8s --threads %s: %6.2f s\n' "$label" "$threads" "$(awk "BEGIN { print $t1 - $t0 }")"
}

SPIN=(-u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000)
PASSIVE=(-u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE)
CHOICE=(-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT)
for ((r = 1; r <= ROUNDS; ++r)); do
  for threads in 1 0; do
    bench_one spin "$threads" "${SPIN[@]}"
    bench_one passive "$threads" "${PASSIVE[@]}"
    bench_one choice "$threads" "${CHOICE[@]}"
    [[ $SMALL == 1 ]] && continue
    quantize_one spin "$threads" "${SPIN[@]}"
    quantize_one passive "$threads" "${PASSIVE[@]}"
    quantize_one choice "$threads" "${CHOICE[@]}"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
