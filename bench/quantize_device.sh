#!/usr/bin/env bash
# Issue 35's side-by-side on the GPU machine, one call: bench/quantize_vs_ort.py with the
# binaries of scripts/make_dist.sh (dist/) and the 68 photos as uint8 224x224 crops
# (PHOTOS, default .dev/photos_u8.npy: generate_calibration --input_dtype uint8 --resize_method
# linear --input_shape 224 224 3 on the photos of scripts/fetch_photos.sh).
# Environment: MODELS (default: the script's set), MODES (int8 fp8), WORKERS (4), BUDGET_S
# (420: no model starts after it), RESUME (a results.json of an earlier call: its models are
# skipped and kept), ONLY_AUTO (models whose other rows were measured before). Results in $OUT (or ./device-results): results.json, table.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out" /tmp/d
tar -C /tmp/d -xJf dist/trtutils-dist.tar.xz
export LD_LIBRARY_PATH=/tmp/d/lib:/usr/local/cuda/lib64
# Where the time goes before any model: imports, the binary, the GPU.
{
  date +%T; /tmp/d/bin/trtutils info 2>&1 | head -5; date +%T
  python3 -c "import time; t=time.time(); import torch, torchvision, onnxruntime; print('imports', round(time.time()-t, 1), 's, threads', torch.get_num_threads())"
  date +%T
} >"$out/preflight.txt" 2>&1
[ -n "${RESUME:-}" ] && cp "$RESUME" "$out/results.json"
# Straight into the file (unbuffered): a pipe through grep lost every line when a time limit
# stopped the call.
# shellcheck disable=SC2086
python3 -u bench/quantize_vs_ort.py --trtutils /tmp/d/bin/trtutils \
  --photos "${PHOTOS:-.dev/photos_u8.npy}" --out "$out" --budget_s "${BUDGET_S:-420}" \
  --workers "${WORKERS:-4}" --modes ${MODES:-int8 fp8} ${MODELS:+--models $MODELS} \
  ${ONLY_AUTO:+--only_auto $ONLY_AUTO} >"$out/table.txt" 2>"$out/stderr.txt"
grep -v "^WARNING:root" "$out/stderr.txt" | tail -40 >"$out/stderr_tail.txt"
