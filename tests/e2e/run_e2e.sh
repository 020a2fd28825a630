#!/usr/bin/env bash
# End-to-end check of real architectures: `trtutils run` (CPU) against ONNX Runtime (CPU,
# onnxruntime-node) on the same seeded random input.
#
#   tests/e2e/run_e2e.sh [MODEL ...]        (default: every model of export_models.py's e2e set)
#
# Environment:
#   TRTUTILS_BIN          trtutils CLI       (default: build/bin/trtutils)
#   NPY_COMPARE           npy_compare tool   (default: next to TRTUTILS_BIN)
#   TRTUTILS_MODEL_CACHE  exported models    (default: ~/.cache/trtutils/models)
#   TRTUTILS_E2E_WORK     scratch folder     (default: a fresh mktemp -d, removed on success)
#   TRTUTILS_E2E_THREADS  --threads for both runtimes (default: unset = their defaults)
#
# Error metric: max_rel_err = max|trtutils - ort| / max|ort| over the output tensor (relative to
# the reference's largest magnitude). Tolerance 1e-4, 1e-3 for ViT-B/16 (long fp32 reductions
# in attention/LayerNorm reassociate differently). Exit 0 all passed, 1 some model failed,
# 77 skipped (no torch/torchvision in /usr/bin/python3, no node, or onnxruntime-node cannot be
# installed).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
TRTUTILS_BIN="${TRTUTILS_BIN:-$ROOT/build/bin/trtutils}"
NPY_COMPARE="${NPY_COMPARE:-$(dirname "$TRTUTILS_BIN")/npy_compare}"
CACHE="${TRTUTILS_MODEL_CACHE:-$HOME/.cache/trtutils/models}"
THREADS="${TRTUTILS_E2E_THREADS:-}"

skip() { echo "run_e2e.sh: SKIP: $*"; exit 77; }
die() { echo "run_e2e.sh: ERROR: $*" >&2; exit 2; }

[[ -x "$TRTUTILS_BIN" ]] || die "trtutils CLI not found at $TRTUTILS_BIN (set TRTUTILS_BIN)"
[[ -x "$NPY_COMPARE" ]] || die "npy_compare not found at $NPY_COMPARE (set NPY_COMPARE)"
[[ -x "$PY" ]] || skip "$PY not found"
"$PY" -c 'import torch, torchvision, numpy' 2>/dev/null || skip "$PY lacks torch/torchvision/numpy"
command -v node >/dev/null || skip "node not found"

# ONNX Runtime (npm). Installed on first use; package-lock.json pins the exact version.
if [[ ! -d "$HERE/node_modules/onnxruntime-node" ]]; then
  command -v npm >/dev/null || skip "npm not found (needed to install onnxruntime-node)"
  echo "run_e2e.sh: installing onnxruntime-node into $HERE/node_modules"
  if [[ -f "$HERE/package-lock.json" ]]; then
    (cd "$HERE" && npm ci --no-audit --no-fund) || skip "npm ci failed (offline?)"
  else
    (cd "$HERE" && npm install --no-audit --no-fund) || skip "npm install failed (offline?)"
  fi
fi
(cd "$HERE" && node -e "require('onnxruntime-node')") >/dev/null 2>&1 \
  || skip "onnxruntime-node does not load on this machine"

if [[ $# -gt 0 ]]; then
  MODELS=("$@")
else
  MODELS=(resnet50 mobilenet_v2 mobilenet_v3_large efficientnet_b0 vit_b_16 mobilenet_v2_dynbatch)
fi

mkdir -p "$CACHE" || die "cannot create model cache $CACHE"
"$PY" "$HERE/export_models.py" --cache "$CACHE" "${MODELS[@]}" 2> >(grep -v -i warning >&2) \
  || die "model export failed"

WORK="${TRTUTILS_E2E_WORK:-$(mktemp -d -t trtutils_e2e.XXXXXX)}"
mkdir -p "$WORK"
THREAD_ARGS=()
ORT_THREAD_ARGS=()
if [[ -n "$THREADS" ]]; then
  THREAD_ARGS=(--threads "$THREADS")
  ORT_THREAD_ARGS=(--threads "$THREADS")
fi

failed=()
summary=()
seed=0
for m in "${MODELS[@]}"; do
  seed=$((seed + 1))
  model="$CACHE/$m.onnx"
  dir="$WORK/$m"
  rm -rf "$dir" && mkdir -p "$dir"
  batch=1
  [[ "$m" == *dynbatch* ]] && batch=2     # exercise the symbolic batch dim with a batch != export
  [[ "$m" == *_b8 ]] && batch=8
  rtol=1e-4
  [[ "$m" == vit* ]] && rtol=1e-3
  "$PY" -c "
import numpy as np, sys
x = np.random.default_rng($seed).standard_normal(($batch, 3, 224, 224)).astype(np.float32)
np.save(sys.argv[1], x)" "$dir/input.npy" || die "cannot write input for $m"

  echo "=== $m (batch $batch, rtol $rtol) ==="
  t0=$(date +%s.%N)
  if ! "$TRTUTILS_BIN" run --onnx "$model" --input "input=$dir/input.npy" --output_dir "$dir/trt" \
      "${THREAD_ARGS[@]}" >"$dir/trt.log" 2>&1; then
    echo "$m: trtutils run FAILED:"; tail -n 20 "$dir/trt.log"
    failed+=("$m"); summary+=("$m: trtutils run failed"); continue
  fi
  t1=$(date +%s.%N)
  if ! (cd "$HERE" && node ort_run.mjs "$model" "$dir/ort" "input=$dir/input.npy" \
      "${ORT_THREAD_ARGS[@]}") >"$dir/ort.log" 2>&1; then
    echo "$m: onnxruntime FAILED:"; tail -n 20 "$dir/ort.log"
    failed+=("$m"); summary+=("$m: onnxruntime failed"); continue
  fi
  t2=$(date +%s.%N)
  line=$("$NPY_COMPARE" "$dir/trt/output.npy" "$dir/ort/output.npy" --rtol "$rtol" --name "$m")
  rc=$?
  echo "$line"
  awk -v m="$m" -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "%s: trtutils run %.1fs, ort %.1fs (wall, incl. load)\n", m, b - a, c - b }'
  summary+=("$line")
  [[ $rc -eq 0 ]] || failed+=("$m")
done

echo
echo "=== e2e summary (max_rel_err = max|trtutils-ort| / max|ort|) ==="
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]} (work folder kept: $WORK)"
  exit 1
fi
echo "OK: all ${#MODELS[@]} models within tolerance"
[[ -z "${TRTUTILS_E2E_WORK:-}" ]] && rm -rf "$WORK"
exit 0
