#!/usr/bin/env bash
# Where channels-last (NHWC) convolutions start to pay on the GPU: ResNet-50 FP16 engines at
# batch 1..64, each timed with NHWC forced (--gpu_switch NHWC_MIN_BATCH=1) and NCHW forced
# (=100000), CUDA graph replay, inputs left on the device. Run from the repo root on the GPU
# machine with dist/ from scripts/make_dist.sh; results in $OUT/crossover.txt.
#   BATCHES="1 2 4 8 16 64" bash bench/cuda/nhwc_crossover.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out"
T="$PWD/dist/bin/trtutils"
export LD_LIBRARY_PATH="$PWD/dist/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
W=/tmp/trtutils-crossover
mkdir -p "$W"
python3 - "$W" <<'PY' >"$out/crossover_export.log" 2>&1
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet50().eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), f"{sys.argv[1]}/r50_dyn.onnx", opset_version=17,
                  input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, dynamo=False)
PY
for b in ${BATCHES:-1 2 4 8 16 64}; do
  line="b$b"
  # The layout switch is recorded in the engine at build time (kernel_switches.h): one engine
  # per mode.
  for mode in nhwc:1 nchw:100000; do
    e="$W/fp16_b${b}_${mode%%:*}.engine"
    "$T" build --onnx "$W/r50_dyn.onnx" --output "$e" --backend cuda --fp16 \
      --shape "input:$b,3,224,224" --gpu_switch "NHWC_MIN_BATCH=${mode#*:}" \
      >>"$out/crossover_build.log" 2>&1 || { echo "b$b: build failed"; continue; }
    ms=$("$T" benchmark --engine "$e" --iterations 50 \
      --warmup_iterations 5 --no_data_transfers 2>&1 | sed -n 's/^GPU compute (ms): min [0-9.]*, median \([0-9.]*\).*/\1/p')
    line="$line ${mode%%:*} ${ms:-?} ms"
  done
  echo "$line" | tee -a "$out/crossover.txt"
done
