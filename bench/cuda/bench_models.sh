#!/usr/bin/env bash
# Other torchvision models on the GPU machine: trtutils CUDA engines against PyTorch eager FP16
# (channels-last, cudnn.benchmark) in the same run. Random weights; engines timed with
# `benchmark --no_data_transfers` (GPU compute, input on the device as in PyTorch's loop).
# Run from the repo root with dist/ from scripts/make_dist.sh; results in $OUT/models_summary.txt.
#   BATCH=256 SPECS="mobilenet_v2:fp16,int8 vit_b_16:fp16,fp8" [PROFILE=1] bash bench/cuda/bench_models.sh
# TORCH_COMPILE=1 adds torch.compile (mode max-autotune-no-cudagraphs) as a second peer.
# PROFILE=1 also writes each engine's per-layer analysis to $OUT/profile_<model>_<prec>.txt.
# Quantized engines: `trtutils quantize` (max, on BATCH random inputs) then `build --strongly_typed`;
# int8h / fp8h: the same with `--high_precision_dtype fp16` (the un-quantized rest in fp16, as
# nvidia-modelopt's default).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out"
T="$PWD/dist/bin/trtutils"
export LD_LIBRARY_PATH="$PWD/dist/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B="${BATCH:-256}"
W=/tmp/trtutils-models
mkdir -p "$W"
sum="$out/models_summary.txt"
for spec in ${SPECS:-mobilenet_v2:fp16,int8 vit_b_16:fp16,fp8}; do
  m=${spec%%:*}
  python3 - "$W" "$B" "$m" <<'PY' >>"$out/models_export.log" 2>&1
import sys, torch, torchvision, numpy as np
w, b, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
m = getattr(torchvision.models, name)().eval()
with torch.no_grad():  # zero-initialised layers (ViT's head) random too: outputs worth comparing
    for p in m.parameters():
        if p.dim() >= 2 and not p.any():
            p.normal_(0, 0.02)
torch.onnx.export(m, torch.randn(b, 3, 224, 224), f"{w}/{name}.onnx", opset_version=17,
                  input_names=["input"], output_names=["output"], dynamo=False)
np.save(f"{w}/calib.npy", np.random.default_rng(0).random((b, 3, 224, 224), dtype=np.float32))
PY
  for p in ${spec#*:}; do
    p=${p//,/ }
    for prec in $p; do
      e="$W/${m}_$prec.engine"
      case $prec in
        fp16) "$T" build --onnx "$W/$m.onnx" --output "$e" --backend cuda --fp16 >>"$out/models_build.log" 2>&1 ;;
        int8 | fp8 | int8h | fp8h)
          hp=fp32
          [ "${prec%h}" != "$prec" ] && hp=fp16
          "$T" quantize --onnx "$W/$m.onnx" --output "$W/${m}_$prec.onnx" --calibration_data "$W/calib.npy" \
            --quantize_mode "${prec%h}" --high_precision_dtype "$hp" --calibration_method max \
            --batch_size "$B" --eval_batches 0 >>"$out/models_build.log" 2>&1
          "$T" build --onnx "$W/${m}_$prec.onnx" --output "$e" --backend cuda --strongly_typed >>"$out/models_build.log" 2>&1 ;;
      esac
      [ -f "$e" ] || { echo "$m $prec: no engine" | tee -a "$sum"; continue; }
      echo "$m $prec b$B: $("$T" benchmark --engine "$e" --iterations 20 --warmup_iterations 3 --no_data_transfers 2>&1 \
        | grep -E 'GPU compute|memory' | tr '\n' ' ')" | tee -a "$sum"
      if [ "${PROFILE:-0}" = "1" ]; then  # per-layer times, top layers in the summary
        "$T" inspect --engine "$e" --json >"$W/${m}_$prec.inspect.json" 2>/dev/null
        "$T" benchmark --engine "$e" --iterations 5 --warmup_iterations 2 --profile \
          --json "$W/${m}_$prec.profile.json" >/dev/null 2>&1
        python3 bench/cuda/profile_analysis.py "$W/${m}_$prec.inspect.json" "$W/${m}_$prec.profile.json" \
          --batch "$B" >"$out/profile_${m}_$prec.txt" 2>&1
      fi
    done
  done
  python3 - "$B" "$m" <<'PY' 2>&1 | tee -a "$sum"
import os, sys, time, torch, torchvision
b, name = int(sys.argv[1]), sys.argv[2]
torch.backends.cudnn.benchmark = True
m = getattr(torchvision.models, name)().eval().cuda().half().to(memory_format=torch.channels_last)
x = torch.randn(b, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
def timed(f, what):  # median of 20 after 5 warm-up runs, with the peak memory of those runs
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        for _ in range(5): f(x)
        torch.cuda.synchronize(); ts = []
        for _ in range(20):
            t0 = time.perf_counter(); f(x); torch.cuda.synchronize(); ts.append(time.perf_counter() - t0)
    ts.sort(); med = ts[len(ts) // 2] * 1000
    print(f"{name} {what} fp16 channels_last b{b}: median {med:.3f} ms, {b / med * 1000:.0f} img/s, "
          f"max_memory_allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB", flush=True)
timed(m, "pytorch eager")
if os.environ.get("TORCH_COMPILE") == "1":  # the second peer: minutes to compile
    t0 = time.perf_counter()
    c = torch.compile(m, mode="max-autotune-no-cudagraphs")
    with torch.inference_mode():
        c(x); torch.cuda.synchronize()
    print(f"{name} torch.compile max-autotune-no-cudagraphs: compiled in {time.perf_counter() - t0:.0f} s")
    timed(c, "torch.compile")
PY
done
