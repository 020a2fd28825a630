#!/usr/bin/env python3
"""Is quantize's calibration the same on every run? MobileNetV3-L (random weights) on the 60
calibration photos, `--calibration_method mse` twice with the GPU calibrating and twice with
TRTUTILS_CALIBRATION_DEVICE=cpu; prints how many initializers of the Q/DQ models differ.
  python3 bench/calibration_determinism.py BIN   (from the repository root; .dev/photos_u8.npy)
"""
import os, subprocess, sys, numpy as np, onnx
from onnx import numpy_helper
sys.path.insert(0, "bench")
import quantize_vs_ort as q
T = sys.argv[1]; W = "/tmp/det"; os.makedirs(W, exist_ok=True)
q.export("mobilenet_v3_large", f"{W}/m.onnx")
d = q.datasets(".dev/photos_u8.npy", 224, True)
np.save(f"{W}/c.npy", d["photos"][0])
def inits(p): return {i.name: numpy_helper.to_array(i) for i in onnx.load(p).graph.initializer}
runs = {}
for tag, env in [("gpu1", {}), ("gpu2", {}), ("cpu1", {"TRTUTILS_CALIBRATION_DEVICE": "cpu"}), ("cpu2", {"TRTUTILS_CALIBRATION_DEVICE": "cpu"})]:
    out = f"{W}/{tag}.onnx"
    r = subprocess.run([T, "quantize", "--onnx", f"{W}/m.onnx", "--output", out, "--calibration_data", f"{W}/c.npy", "--calibration_method", "mse", "--eval_batches", "0", "--threads", "16", "--no_report_file"], env={**os.environ, **env}, capture_output=True, text=True)
    print(tag, r.returncode, [l for l in r.stdout.splitlines() if "calibration" in l][:2], r.stderr[-300:], flush=True)
    runs[tag] = inits(out)
def ndiff(a, b): return sum(1 for k in a if not np.array_equal(a[k], b.get(k)))
for x, y in [("gpu1", "gpu2"), ("cpu1", "cpu2"), ("gpu1", "cpu1")]:
    print(x, y, "initializers that differ:", ndiff(runs[x], runs[y]), "of", len(runs[x]))
