#!/usr/bin/env bash
# A/B rounds on the CPU: each round runs every given trtutils binary, then ONNX Runtime
# (onnxruntime-node from tests/e2e, graphOptimizationLevel=all), back to back on the same seeded
# input and thread count, and prints one line of medians. On a shared machine only ratios
# within a round mean anything: the last lines give, per binary, the median over rounds of its
# round's time / ONNX Runtime's. --rss adds each one's peak RSS (/usr/bin/time -f %M) of one run
# of the model (`trtutils run --onnx`, ort_run.mjs with one iteration).
#
#   bench/cpu_ab.sh [--rounds N] [--iterations N] [--threads N] [--rss] MODEL.onnx BIN...
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E="$HERE/../tests/e2e"
ROUNDS=3 ITERS=10 THREADS=2 RSS=0
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --iterations) ITERS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rss) RSS=1; shift ;;
    *) echo "usage: $0 [--rounds N] [--iterations N] [--threads N] [--rss] MODEL.onnx BIN..." >&2; exit 2 ;;
  esac
done
[[ $# -ge 2 ]] || { echo "usage: $0 [--rounds N] [--iterations N] [--threads N] [--rss] MODEL.onnx BIN..." >&2; exit 2; }
MODEL="$1"; shift
WORK="$(mktemp -d -t trtutils_ab.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# The input: the model's first input, static shape (float32), N(0, 1) with seed 0.
/usr/bin/python3 - "$MODEL" "$WORK/input.npy" <<'PY'
import sys, numpy as np, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
x = [i for i in m.graph.input if i.name not in inits][0]
shape = [d.dim_value if d.dim_value > 0 else 1 for d in x.type.tensor_type.shape.dim]
np.save(sys.argv[2], np.random.default_rng(0).standard_normal(shape).astype(np.float32))
open(sys.argv[2] + ".name", "w").write(x.name)
PY
NAME="$(cat "$WORK/input.npy.name")"
echo "model: $MODEL, threads: $THREADS, iterations: $ITERS (warm-up 2)"
for ((r = 1; r <= ROUNDS; r++)); do
  line="round $r load $(cut -d' ' -f1 /proc/loadavg):"
  for bin in "$@"; do
    med=$("$bin" benchmark --onnx "$MODEL" --input "$NAME=$WORK/input.npy" --iterations "$ITERS" \
      --warmup 2 --threads "$THREADS" | sed -n 's/.*median \([0-9.]*\).*/\1/p' | head -n1)
    line+=" $(basename "$bin")=$med"
  done
  ort=$(cd "$E2E" && node ort_run.mjs "$MODEL" - "$NAME=$WORK/input.npy" --threads "$THREADS" \
    --iterations "$ITERS" --warmup 2 --opt all | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')
  echo "$line ort=$ort"
  echo "$line ort=$ort" >>"$WORK/rounds"
done
# Per binary: the median over rounds of (its time / ORT's time in that round).
/usr/bin/python3 - "$WORK/rounds" <<'PY'
import re, statistics, sys
ratios = {}
for line in open(sys.argv[1]):
    vals = dict(re.findall(r"(\S+)=([0-9.]+)", line))
    ort = float(vals.pop("ort", "nan"))
    for k, v in vals.items():
        ratios.setdefault(k, []).append(float(v) / ort)
for k, r in ratios.items():
    print(f"{k} / ort: median {statistics.median(r):.3f} over {len(r)} rounds "
          f"(min {min(r):.3f}, max {max(r):.3f})")
PY
if [[ "$RSS" == 1 ]]; then
  for bin in "$@"; do
    /usr/bin/time -o "$WORK/rss" -f %M "$bin" run --onnx "$MODEL" --input "$NAME=$WORK/input.npy" \
      --threads "$THREADS" --output_dir "$WORK/out" >/dev/null 2>&1
    echo "peak RSS $(basename "$bin"): $(($(tail -n1 "$WORK/rss") / 1024)) MiB"
  done
  (cd "$E2E" && /usr/bin/time -o "$WORK/rss" -f %M node ort_run.mjs "$MODEL" - \
    "$NAME=$WORK/input.npy" --threads "$THREADS" --iterations 1 --warmup 0 --opt all >/dev/null 2>&1)
  echo "peak RSS ort: $(($(tail -n1 "$WORK/rss") / 1024)) MiB"
fi
