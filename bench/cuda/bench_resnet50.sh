#!/usr/bin/env bash
# ResNet-50 (torchvision, random weights) on the GPU machine: trtutils CUDA engines (fp32/TF32,
# fp16, int8 and fp8 strongly typed from `trtutils quantize`) against PyTorch eager FP16
# (channels-last, cudnn.benchmark) in the same run. Batch 256 throughput and batch 1 latency.
# Run from the repo root with dist/ from scripts/make_dist.sh; results in $OUT/bench_*.
#   BATCH=256 ITERS=20 [PRECISIONS="fp32 fp16 int8 fp8"] [TORCH_COMPILE=1] bench/cuda/bench_resnet50.sh
# Each engine is timed twice: with the host copies of the input / outputs (trtexec's default)
# and with --no_data_transfers (input on the device, as in PyTorch's loop). The INT8 engine is
# also profiled per layer (bench/cuda/profile_analysis.py; PROFILE="int8 fp8" for more). TORCH_COMPILE=1 adds torch.compile
# (mode max-autotune-no-cudagraphs, ~5 min to compile) as a second peer.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/device-results}"
mkdir -p "$out"
T="$PWD/dist/bin/trtutils"
export LD_LIBRARY_PATH="$PWD/dist/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B="${BATCH:-256}"
ITERS="${ITERS:-20}"
W=/tmp/trtutils-bench
mkdir -p "$W"
python3 - "$W" "$B" <<'PY' >"$out/bench_export.log" 2>&1
import sys, torch, torchvision, numpy as np
w, b = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
m = torchvision.models.resnet50().eval()
for bs, name in ((b, "r50_b"), (1, "r50_1")):
    x = torch.randn(bs, 3, 224, 224)
    torch.onnx.export(m, x, f"{w}/{name}.onnx", opset_version=17, input_names=["input"],
                      output_names=["output"], dynamo=False)
rng = np.random.default_rng(0)
np.save(f"{w}/calib.npy", rng.random((b, 3, 224, 224), dtype=np.float32))
PY
echo "export: $?" | tee -a "$out/bench_summary.txt"
# Engines.
P="${PRECISIONS:-fp32 fp16 int8 fp8}"
want() { [[ " $P " == *" $1 "* ]]; }
: >"$out/bench_build.log"
want fp32 && "$T" build --onnx "$W/r50_b.onnx" --output "$W/fp32.engine" --backend cuda >>"$out/bench_build.log" 2>&1
if want fp16; then
  "$T" build --onnx "$W/r50_b.onnx" --output "$W/fp16.engine" --backend cuda --fp16 >>"$out/bench_build.log" 2>&1
  "$T" build --onnx "$W/r50_1.onnx" --output "$W/fp16_b1.engine" --backend cuda --fp16 >>"$out/bench_build.log" 2>&1
fi
for q in int8 fp8; do
  want $q || continue
  "$T" quantize --onnx "$W/r50_b.onnx" --output "$W/$q.onnx" --calibration_data "$W/calib.npy" \
    --quantize_mode $q --calibration_method max --batch_size 256 --eval_batches 0 >>"$out/bench_build.log" 2>&1
  "$T" build --onnx "$W/$q.onnx" --output "$W/$q.engine" --backend cuda --strongly_typed >>"$out/bench_build.log" 2>&1
done
tail -n 5 "$out/bench_build.log"
for e in $P; do
  [ -f "$W/$e.engine" ] || { echo "$e: no engine" | tee -a "$out/bench_summary.txt"; continue; }
  "$T" benchmark --engine "$W/$e.engine" --iterations "$ITERS" --warmup_iterations 3 \
    --json "$out/bench_$e.json" >"$out/bench_$e.log" 2>&1
  echo "$e b$B: $(grep -E 'throughput|latency|split|memory' "$out/bench_$e.log" | tr '\n' ' ')" | tee -a "$out/bench_summary.txt"
  # Inputs already on the device, outputs left there: what PyTorch's loop below measures.
  "$T" benchmark --engine "$W/$e.engine" --iterations "$ITERS" --warmup_iterations 3 --no_data_transfers \
    --json "$out/bench_${e}_nodt.json" >"$out/bench_${e}_nodt.log" 2>&1
  echo "$e b$B no_data_transfers: $(grep -E 'throughput|GPU compute' "$out/bench_${e}_nodt.log" | tr '\n' ' ')" | tee -a "$out/bench_summary.txt"
done
# Per-layer profiles (PROFILE, default "int8") against each layer's operations and bytes.
for e in ${PROFILE:-int8}; do
  [ -f "$W/$e.engine" ] || continue
  "$T" inspect --engine "$W/$e.engine" --json >"$out/inspect_$e.json" 2>/dev/null
  "$T" inspect --engine "$W/$e.engine" >"$out/inspect_$e.txt" 2>&1
  "$T" benchmark --engine "$W/$e.engine" --iterations 5 --warmup_iterations 2 --profile \
    --json "$out/profile_$e.json" >"$out/profile_$e.log" 2>&1
  python3 bench/cuda/profile_analysis.py "$out/inspect_$e.json" "$out/profile_$e.json" \
    --batch "$B" >"$out/profile_${e}_analysis.txt" 2>&1
  sed -n '1,30p' "$out/profile_${e}_analysis.txt"
done
if [ -f "$W/fp16_b1.engine" ]; then
  "$T" benchmark --engine "$W/fp16_b1.engine" --iterations 100 --warmup_iterations 10 >"$out/bench_fp16_b1.log" 2>&1
  echo "fp16 b1: $(grep -E 'latency' "$out/bench_fp16_b1.log")" | tee -a "$out/bench_summary.txt"
fi
python3 - "$B" "$ITERS" <<'PY' 2>&1 | tee -a "$out/bench_summary.txt"
import sys, time, torch, torchvision
b, iters = int(sys.argv[1]), int(sys.argv[2])
torch.backends.cudnn.benchmark = True
m = torchvision.models.resnet50().eval().cuda().half().to(memory_format=torch.channels_last)
def run(bs, n):
    x = torch.randn(bs, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
    with torch.inference_mode():
        for _ in range(5): m(x)
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter(); m(x); torch.cuda.synchronize(); ts.append(time.perf_counter() - t0)
    ts.sort(); return ts[len(ts) // 2] * 1000
torch.cuda.reset_peak_memory_stats()
med = run(b, iters)
print(f"pytorch eager fp16 channels_last b{b}: median {med:.3f} ms, {b / med * 1000:.0f} img/s, "
      f"max_memory_allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
print(f"pytorch eager fp16 b1: median {run(1, 100):.3f} ms")
import os
if os.environ.get("TORCH_COMPILE") == "1":
    t0 = time.perf_counter()
    eager = m
    m = torch.compile(eager, mode="max-autotune-no-cudagraphs")
    x = torch.randn(b, 3, 224, 224, device="cuda").half().to(memory_format=torch.channels_last)
    with torch.inference_mode():
        m(x); torch.cuda.synchronize()
    print(f"torch.compile max-autotune-no-cudagraphs: compiled in {time.perf_counter() - t0:.0f} s")
    torch.cuda.reset_peak_memory_stats()
    med = run(b, iters)
    print(f"torch.compile fp16 channels_last b{b}: median {med:.3f} ms, {b / med * 1000:.0f} img/s, "
          f"max_memory_allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
PY
