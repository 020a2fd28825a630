#!/usr/bin/env python3
"""Our `quantize` against ONNX Runtime's `quantize_static`, judged by ONNX Runtime (issue 35).

For each torchvision model (random weights; BatchNorm running statistics from 3 random batches,
so activations are healthy) and each calibration set (uniform noise; real photos), both
quantizers get the same float model and the same calibration samples:
  ours  trtutils quantize --calibration_method M --eval_batches 0 (all samples calibrate)
  ORT   quantize_static(QDQ, per-channel symmetric int8 weights, symmetric int8 activations,
        MinMax / Entropy / Percentile), ONNX Runtime's defaults otherwise
and ONNX Runtime (CPU, graph optimization 'basic') runs the float and every Q/DQ model on held-out
samples of the same kind; the figure is the output SQNR in dB over them. Ours also runs `mse` and
`auto`, which ONNX Runtime does not have. Percentile is 99.999 for both (ONNX Runtime's default).

Runs where torch, torchvision, onnxruntime and a trtutils binary are (the GPU machine):
  python3 bench/quantize_vs_ort.py --trtutils BIN --photos photos_u8.npy --out DIR [--models ...]
photos_u8.npy: uint8 [N, 3, 224, 224] crops (generate_calibration --input_dtype uint8); the
first N - 8 calibrate, the last 8 judge; noise: 32 calibrate, 8 judge. Writes DIR/results.json
(after every model) and prints one table row per model, data set and method.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
DEFAULT_MODELS = ["mobilenet_v2", "resnet50", "mobilenet_v3_large", "efficientnet_b0",
                  "resnet18", "regnet_y_1_6gf", "densenet121", "resnext50_32x4d",
                  "efficientnet_v2_s", "convnext_tiny", "swin_t", "vit_b_16",
                  "wide_resnet50_2"]
OURS = ["max", "entropy", "percentile", "mse", "auto"]
ORT = {"max": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}


def export(name, path):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = None
            m.reset_running_stats()
    model.train()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, 3, 224, 224, generator=g))
    model.eval()
    x = torch.randn(1, 3, 224, 224, generator=g)
    torch.onnx.export(model, x, path, opset_version=17, input_names=["input"],
                      output_names=["output"], dynamo=False)


def datasets(photos_path):
    rng = np.random.default_rng(0)
    noise = rng.uniform(0, 1, (40, 3, 224, 224)).astype(np.float32)
    out = {"noise": (noise[:32], noise[32:])}
    if photos_path:
        u8 = np.load(photos_path)
        p = ((u8.astype(np.float32) / 255.0) - MEAN) / STD
        out["photos"] = (p[:-8], p[-8:])
    return out


def sqnr(ref, got):
    ref = np.concatenate([r.ravel() for r in ref]).astype(np.float64)
    got = np.concatenate([g.ravel() for g in got]).astype(np.float64)
    err = np.sum((ref - got) ** 2)
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref ** 2) / err))


def run_ort(path, samples, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return [s.run(None, {name: samples[i:i + 1]})[0] for i in range(len(samples))]


def ort_quantize(fp32, out, calib, method):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": calib[i:i + 1]} for i in range(len(calib))])

        def get_next(self):
            return next(self.it, None)

    quantize_static(fp32, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, ORT[method]),
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True,
                                   "CalibPercentile": 99.999})


def our_quantize(binary, fp32, out, calib_npy, method, threads):
    cmd = [binary, "-q", "quantize", "--onnx", fp32, "--output", out, "--calibration_data",
           calib_npy, "--calibration_method", method, "--eval_batches", "0", "--percentile",
           "99.999", "--threads", str(threads), "--no_report_file"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--photos", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--budget_s", type=float, default=540, help="stop starting models after this")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = "/tmp/quantize_vs_ort"  # models and Q/DQ copies: not among the results
    os.makedirs(work, exist_ok=True)
    data = datasets(args.photos)
    results_path = os.path.join(args.out, "results.json")
    results = json.load(open(results_path)) if os.path.exists(results_path) else {}
    start = time.time()
    print(f"{'model':<22} {'data':<7} {'method':<11} {'ours dB':>8} {'ORT dB':>8}", flush=True)
    for name in args.models:
        if time.time() - start > args.budget_s:
            print(f"budget reached: {name} and later not run", flush=True)
            break
        fp32 = os.path.join(work, name + ".onnx")
        t0 = time.time()
        export(name, fp32)
        row = results.setdefault(name, {})
        for dname, (calib, held) in data.items():
            calib_npy = os.path.join(work, f"calib_{dname}.npy")
            np.save(calib_npy, calib)
            ref = run_ort(fp32, held, args.threads)
            for method in OURS:
                q = os.path.join(work, f"{name}_{dname}_{method}_ours.onnx")
                our_quantize(args.trtutils, fp32, q, calib_npy, method, args.threads)
                ours = sqnr(ref, run_ort(q, held, args.threads))
                theirs = None
                if method in ORT:
                    qo = os.path.join(work, f"{name}_{dname}_{method}_ort.onnx")
                    ort_quantize(fp32, qo, calib, method)
                    theirs = sqnr(ref, run_ort(qo, held, args.threads))
                row.setdefault(dname, {})[method] = {"ours": ours, "ort": theirs}
                print(f"{name:<22} {dname:<7} {method:<11} {ours:8.2f} "
                      f"{'' if theirs is None else f'{theirs:8.2f}'}", flush=True)
        row["seconds"] = time.time() - t0
        json.dump(results, open(results_path, "w"), indent=1)
        for f in os.listdir(work):
            if f.startswith(name):
                os.unlink(os.path.join(work, f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
