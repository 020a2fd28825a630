#!/usr/bin/env bash
# Where a GPU int8 engine parts from the CPU backend (issue 29: the zoo's int8 rows where the GPU
# agrees with ONNX Runtime 1-4 dB less well than our CPU backend does). For each model whose zoo
# work folder holds int8.engine and x.npy (bench/cuda/zoo_gpu.py --out ZOO), `trtutils compare
# --layerwise` runs the engine on the CPU backend (A, the reference) and the CUDA backend (B) and
# names every layer output both expose with its SQNR; results in $OUT/layerwise_<model>.json and
# .txt. Run from the repo root on the GPU machine after dist/ is unpacked:
#   ZOO=/tmp/zoo bash bench/cuda/int8_layerwise.sh resnet18 mobilenet_v3_large
set -uo pipefail
out="${OUT:-$PWD/device-results}"
zoo="${ZOO:-/tmp/zoo}"
bin="${TRTUTILS:-dist/bin/trtutils}"
mkdir -p "$out"
for m in "$@"; do
  d="$zoo/$m"
  [ -f "$d/int8.engine" ] || { echo "$m: no $d/int8.engine"; continue; }
  timeout "${PER_MODEL_S:-120}" "$bin" compare "$d/int8.engine" "$d/int8.engine" \
    --a_backend cpu --b_backend cuda --input "$d/x.npy" --layerwise --atol 1e-3 --rtol 1e-2 \
    --json "$out/layerwise_$m.json" >"$out/layerwise_$m.txt" 2>&1
  echo "$m: exit $?"
  tail -n 25 "$out/layerwise_$m.txt"
done
