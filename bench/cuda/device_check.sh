#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine. Run from the repo root with the binaries of
# scripts/make_dist.sh in dist/ (its archive is unpacked here; DIST=... for another folder):
#   1. environment: nvidia-smi, where cuDNN / cuBLASLt come from, missing libraries (ldd);
#   2. the GPU unit tests (gtest suites Cuda* and DeviceStatus*) -> gtest.xml, gtest.log;
#   3. unless SKIP_MODELS=1: torchvision ResNet-50, MobileNetV2, EfficientNet-B0, ViT-B/16 with
#      random weights (exported here by bench/cuda/export_models.py with the machine's torch) run
#      through the Executor in fp32 / fp16 / int8 vs the CPU Session, with times per run
#      -> models.csv, models.log.
# Results go to $OUT (the device runner's folder) or ./device-results. Exit status: that of the
# unit tests (the model step's failures are in its log and csv).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
dist="${DIST:-dist}"
mkdir -p "$out"
bin="$dist/bin/trtutils_tests"
if [ ! -x "$bin" ] && [ -f "$dist/trtutils-dist.tar.xz" ]; then
  mkdir -p "$dist" && tar -C "$dist" -xJf "$dist/trtutils-dist.tar.xz"
fi
if [ ! -x "$bin" ]; then
  echo "device_check.sh: $bin not found; run scripts/make_dist.sh first" | tee "$out/error.txt" >&2
  exit 2
fi
# cuDNN and cuBLASLt: the toolkit's, else the ones that PyTorch's wheels bring.
libpath="$PWD/$dist/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libpath="$libpath:$d"; done
if ! ls /usr/local/cuda/lib64/libcudnn.so.9* >/dev/null 2>&1; then
  for pkg in cudnn cublas; do
    d=$(python3 -c "import nvidia.$pkg as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)
    [ -n "$d" ] && [ -d "$d" ] && libpath="$libpath:$d"
  done
fi
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== LD_LIBRARY_PATH"; echo "$LD_LIBRARY_PATH"
  echo "== ldd"; ldd "$bin"
  echo "== missing"; ldd "$bin" | grep "not found" || echo none
} >"$out/env.txt" 2>&1
cat "$out/env.txt" | sed -n '/== missing/,$p'

"$bin" --gtest_filter="${GTEST_FILTER:-Cuda*:DeviceStatus*}" \
  --gtest_output="xml:$out/gtest.xml" >"$out/gtest.log" 2>&1
status=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests ran" "$out/gtest.log" | tail -40
echo "unit tests: exit $status"

if [ "${SKIP_MODELS:-0}" != "1" ]; then
  models="${MODELS_DIR:-/tmp/trtutils-cuda-models}"
  (
    set -e
    python3 bench/cuda/export_models.py "$models" ${MODEL_NAMES:-}
    rm -f "$out/models.csv"
    TRTUTILS_CUDA_MODELS="$models" TRTUTILS_CUDA_REPORT="$out/models.csv" \
      "$bin" --gtest_filter='CudaTorchvision.*' --gtest_output="xml:$out/models.xml"
  ) >"$out/models.log" 2>&1
  echo "models: exit $?"
  grep -E "cuda-model|FAILED|PASSED|rror" "$out/models.log" | grep -v "layer," | tail -40
fi
exit $status
