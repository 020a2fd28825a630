#!/usr/bin/env python3
"""Is quantize's calibration the same on every run, and on the GPU as on the CPU?

MobileNetV3-L (torchvision, random weights, BatchNorm statistics from random batches) on the 60
calibration photos: `quantize --calibration_method METHOD` twice with the GPU calibrating and
twice with TRTUTILS_CALIBRATION_DEVICE=cpu. Prints how many initializers of the Q/DQ models
differ between the runs, and the activation tensors whose scale differs most between the GPU
and the CPU calibration.
  python3 bench/calibration_determinism.py BIN [METHOD]   (repository root; .dev/photos_u8.npy)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, "bench")
import quantize_vs_ort as q  # noqa: E402

WORK = "/tmp/calibration_determinism"


def initializers(path):
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def activation_scales(path):
    """Quantized activation -> its scale (QuantizeLinear of a non-initializer)."""
    g = onnx.load(path).graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    return {n.input[0]: float(inits[n.input[1]].ravel()[0]) for n in g.node
            if n.op_type == "QuantizeLinear" and n.input[0] not in inits and n.input[1] in inits}


def quantize(binary, method, out, env):
    cmd = [binary, "quantize", "--onnx", f"{WORK}/m.onnx", "--output", out, "--calibration_data",
           f"{WORK}/c.npy", "--calibration_method", method, "--eval_batches", "0", "--threads",
           str(os.cpu_count()), "--no_report_file"]
    r = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
    print(out, "rc", r.returncode, r.stderr[-300:] if r.returncode else "", flush=True)


def main():
    binary, method = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "mse"
    os.makedirs(WORK, exist_ok=True)
    q.export("mobilenet_v3_large", f"{WORK}/m.onnx")
    np.save(f"{WORK}/c.npy", q.datasets(".dev/photos_u8.npy", 224, True)["photos"][0])
    cpu = {"TRTUTILS_CALIBRATION_DEVICE": "cpu"}
    runs = {}
    for tag, env in [("gpu1", {}), ("gpu2", {}), ("cpu1", cpu), ("cpu2", cpu)]:
        quantize(binary, method, f"{WORK}/{tag}.onnx", env)
        runs[tag] = initializers(f"{WORK}/{tag}.onnx")
    for x, y in [("gpu1", "gpu2"), ("cpu1", "cpu2"), ("gpu1", "cpu1")]:
        n = sum(1 for k in runs[x] if not np.array_equal(runs[x][k], runs[y].get(k)))
        print(x, y, "initializers that differ:", n, "of", len(runs[x]))
    g, c = activation_scales(f"{WORK}/gpu1.onnx"), activation_scales(f"{WORK}/cpu1.onnx")
    ratios = sorted(((g[t] / c[t], t) for t in g if t in c and c[t] > 0),
                    key=lambda r: -abs(np.log(r[0])))
    print("activation scales, GPU / CPU calibration (largest differences first):")
    for r, t in ratios[:12]:
        print(f"  {r:8.4f}  {t}")


if __name__ == "__main__":
    main()
