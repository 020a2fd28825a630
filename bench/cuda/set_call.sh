#!/usr/bin/env bash
# One device call for issue 31's set: unpack dist/, run the GPU unit tests named by GTEST (if
# any) and the probes in dist/, then bench/cuda/model_set.py on MODELS with profiles at batch
# BATCH (default 256); everything lands in $OUT.
#   GTEST='CudaQConvNhwc.*' MODELS="resnet50 swin_t" SET_TIMEOUT_S=440 BUDGET_S=230 \
#       [BATCH=256] bash bench/cuda/set_call.sh
# (results: $OUT/model_set_b$BATCH.json, set.log, profiles_b$BATCH.tgz, gtest.log, *_probe.txt)
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out"
tar -C dist -xJf dist/trtutils-dist.tar.xz
export LD_LIBRARY_PATH="$PWD/dist/lib:/usr/local/cuda/lib64" PYTHONUNBUFFERED=1
export TRTUTILS_TEST_CLI="$PWD/dist/bin/trtutils"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >"$out/gpu.txt" 2>&1
if [ -n "${GTEST:-}" ]; then
  timeout "${GTEST_TIMEOUT_S:-100}" dist/bin/trtutils_tests --gtest_filter="$GTEST" \
    >"$out/gtest.log" 2>&1
  echo "gtest rc=$?" >>"$out/gtest.log"
fi
for probe in dist/*_probe; do  # micro benchmarks built beside the dist (bench/cuda/*_probe.cu)
  [ -x "$probe" ] && timeout 60 "$probe" >"$out/$(basename "$probe").txt" 2>&1
done
if [ -n "${MODELS:-}" ]; then
  b="${BATCH:-256}"
  # shellcheck disable=SC2086  # MODELS is a list of names
  timeout "${SET_TIMEOUT_S:-440}" python3 bench/cuda/model_set.py --trtutils dist/bin/trtutils \
    --out "/tmp/set_b$b" --batch "$b" --workers "${WORKERS:-4}" --profile \
    --budget_s "${BUDGET_S:-230}" --prepare_timeout_s "${PREPARE_TIMEOUT_S:-300}" ${EXTRA:-} \
    --json "$out/model_set_b$b.json" $MODELS >>"$out/set.log" 2>&1
  echo "model_set batch $b rc=$?" >>"$out/set.log"
  (cd "/tmp/set_b$b" && tar czf "$out/profiles_b$b.tgz" profile_*.txt ./*/log.txt 2>/dev/null)
fi
