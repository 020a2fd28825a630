#!/usr/bin/env bash
# Quantization speed and memory: ResNet-50 (torchvision, random weights, opset 17) calibrated on
# N crops of real photos (default 512), int8 entropy, on the CPU backend; wall time and peak RSS
# (GNU time), plus the model size and one batch of activations for the memory goal
# (peak RSS < 2 x (model + one batch of activations)).
#
#   bench/quantize_bench.sh [N] [METHOD] [THREADS]      (defaults: 512 entropy 2)
# Environment: TRTUTILS_BIN (default build/bin/trtutils), TRTUTILS_MODEL_CACHE.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
PY=/usr/bin/python3
BIN="${TRTUTILS_BIN:-$ROOT/build/bin/trtutils}"
CACHE="${TRTUTILS_MODEL_CACHE:-$HOME/.cache/trtutils/models}"
N="${1:-512}"
METHOD="${2:-entropy}"
THREADS="${3:-2}"
WORK="$(mktemp -d -t trtutils_qbench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

[[ -x "$BIN" ]] || { echo "trtutils not found at $BIN (set TRTUTILS_BIN)"; exit 2; }
[[ -f "$CACHE/resnet50.onnx" ]] || "$PY" "$ROOT/tests/e2e/export_models.py" --cache "$CACHE" resnet50
"$PY" "$ROOT/tests/e2e/quantize_calib_photos.py" "$WORK/calib.npy" --count $((N + 8)) --size 224
/usr/bin/time -v "$BIN" -v quantize --onnx "$CACHE/resnet50.onnx" --output "$WORK/r50_int8.onnx" \
  --calibration_data "$WORK/calib.npy" --calibration_method "$METHOD" --eval_batches 8 \
  --threads "$THREADS" 2>"$WORK/time.log" | tee "$WORK/out.log"
grep -E "calibration:|report:" "$WORK/time.log" || true
wall=$(grep "Elapsed (wall clock)" "$WORK/time.log" | awk '{print $NF}')
rss_kb=$(grep "Maximum resident set size" "$WORK/time.log" | awk '{print $NF}')
model_mb=$(du -m "$CACHE/resnet50.onnx" | cut -f1)
# Sum of every intermediate tensor of one batch-1 inference (fp32): the activations bound.
act_mb=$("$PY" - "$CACHE/resnet50.onnx" <<'PYEOF'
import sys, onnx
from onnx import shape_inference
m = shape_inference.infer_shapes(onnx.load(sys.argv[1]))
tot = 0
for v in m.graph.value_info:
    n = 1
    for d in v.type.tensor_type.shape.dim:
        n *= d.dim_value if d.dim_value > 0 else 1
    tot += 4 * n
print(tot // (1 << 20))
PYEOF
)
echo "resnet50 int8 $METHOD, $N calibration images, $THREADS threads: wall $wall, peak RSS $((rss_kb / 1024)) MiB" \
     "(model $model_mb MiB + one batch of activations $act_mb MiB; goal < $((2 * (model_mb + act_mb))) MiB)"
