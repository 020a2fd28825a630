#!/usr/bin/env python3
"""Our `quantize` against ONNX Runtime's `quantize_static`, judged by ONNX Runtime (issue 35).

For each model (torchvision, random weights, BatchNorm running statistics from 3 random batches
so that activations are healthy; and the YOLOv8-shaped detector of bench/cuda/yolo_bench.py at
640x640) and each calibration set (uniform noise; real photos), both quantizers get the same
float model and the same calibration samples:
  ours  trtutils quantize --calibration_method M --eval_batches 0 (all samples calibrate),
        int8 and fp8 (E4M3)
  ORT   quantize_static(QDQ, per-channel symmetric int8 weights, symmetric int8 activations,
        MinMax / Entropy / Percentile), ONNX Runtime's defaults otherwise (it has no FP8)
and ONNX Runtime (CPU, graph optimization 'basic') runs the float and every Q/DQ model on held-out
samples of the same kind; the figure is the output SQNR in dB over them (all outputs together).
Ours also runs `mse` and `auto`, which ONNX Runtime does not have. Percentile is 99.999 for both
(ONNX Runtime's default).

Where ours is below ONNX Runtime with the same method, the row is followed by diagnostics: the
op types whose inputs each quantizer quantized, and ours re-run with single changes
(bias correction off, one op type excluded) to find what the difference is.

Runs where torch, torchvision, onnxruntime and a trtutils binary are (the GPU machine):
  python3 bench/quantize_vs_ort.py --trtutils BIN --photos photos_u8.npy --out DIR
      [--models ...] [--modes int8 fp8] [--workers 4] [--budget_s 480]
photos_u8.npy: uint8 [N, 3, 224, 224] crops (generate_calibration --input_dtype uint8); the
first N - 8 calibrate, the last 8 judge; noise: 32 calibrate, 8 judge. Writes DIR/results.json
(after every model; a second call with the same DIR skips the models already there) and prints
one table row per model, data set, mode and method (as it is measured, then per model).
--only_auto MODEL...: rows whose other methods were measured before with unchanged code: only
int8 auto and fp8 max / auto are run (no ONNX Runtime quantization).
"""
import argparse
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
# Slow ones first, so that the workers finish together.
DEFAULT_MODELS = ["vit_b_16", "swin_t", "wide_resnet50_2", "convnext_tiny", "efficientnet_v2_s",
                  "densenet121", "resnext50_32x4d", "resnet50", "yolov8n_like",
                  "regnet_y_1_6gf", "deeplabv3_mobilenet_v3_large", "mobilenet_v3_large",
                  "efficientnet_b0", "mobilenet_v2"]
OURS = ["max", "entropy", "percentile", "mse", "auto"]
ORT = {"max": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
WORK = "/tmp/quantize_vs_ort"  # models and Q/DQ copies: not among the results


def input_size(name):
    return 640 if name == "yolov8n_like" else 224


def export(name, path):
    import torch
    import torchvision
    torch.manual_seed(0)
    size = input_size(name)
    if name == "yolov8n_like":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda"))
        import yolo_bench
        model = yolo_bench.make_model()
    else:
        if name.startswith("deeplabv3"):
            seg = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
                weights=None, weights_backbone=None, aux_loss=False)

            class Out(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = seg

                def forward(self, x):
                    return self.m(x)["out"]
            model = Out()
        else:
            model = getattr(torchvision.models, name)(weights=None)
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.momentum = None
                m.reset_running_stats()
        model.train()
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(8, 3, size, size, generator=g))
        model.eval()
    x = torch.rand(1, 3, size, size)
    kw = dict(opset_version=17, input_names=["input"], output_names=["output"])
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kw)
    except TypeError:  # PyTorch before 2.5 (Debian 12's 1.13): no dynamo argument
        torch.onnx.export(model, x, path, **kw)


def datasets(photos_path, size, normalize):
    rng = np.random.default_rng(0)
    noise = rng.uniform(0, 1, (40, 3, size, size)).astype(np.float32)
    out = {"noise": (noise[:32], noise[32:])}
    if photos_path:
        p = np.load(photos_path).astype(np.float32) / 255.0
        if size != p.shape[-1]:
            import torch
            p = torch.nn.functional.interpolate(torch.from_numpy(p), size=(size, size),
                                                mode="bilinear", align_corners=False).numpy()
        if normalize:
            p = (p - MEAN) / STD
        p = np.ascontiguousarray(p, dtype=np.float32)
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
    return [np.concatenate([o.ravel() for o in s.run(None, {name: samples[i:i + 1]})])
            for i in range(len(samples))]


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


def our_quantize(binary, fp32, out, calib_npy, mode, method, threads, extra=()):
    cmd = [binary, "-q", "quantize", "--onnx", fp32, "--output", out, "--calibration_data",
           calib_npy, "--quantize_mode", mode, "--calibration_method", method, "--eval_batches",
           "0", "--percentile", "99.999", "--threads", str(threads), "--no_report_file",
           *extra]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    m = re.search(r"calibration_method auto: (\w+)", r.stdout)
    if not m:
        return None
    # auto's paired test, per candidate: mean per-batch SQNR gain over max and its standard error.
    gains = {g.group(1): [float(g.group(2)), float(g.group(3))] for g in re.finditer(
        r"(\w+) -?[\d.]+ \(([+-][\d.]+) \+/- ([\d.]+) dB per batch vs max\)", r.stdout)}
    return {"chosen": m.group(1), "gains": gains}


def quantized_op_inputs(path):
    """Consumer op type -> number of its inputs fed by an activation DequantizeLinear."""
    import onnx
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    q_out = {n.output[0] for n in g.node if n.op_type == "QuantizeLinear"
             and n.input[0] not in inits}
    dq_out = {n.output[0] for n in g.node if n.op_type == "DequantizeLinear"
              and n.input[0] in q_out}
    counts = {}
    for n in g.node:
        k = sum(1 for i in n.input if i in dq_out)
        if k:
            counts[n.op_type] = counts.get(n.op_type, 0) + k
    return counts


def diagnose(args, name, fp32, dname, calib_npy, held, ref, threads, ort_model):
    """Why ours is below ONNX Runtime on this row: placement counts and single-change re-runs."""
    ours_max = os.path.join(WORK, f"{name}_{dname}_diag_base.onnx")
    our_quantize(args.trtutils, fp32, ours_max, calib_npy, "int8", "max", threads)
    d = {"ours_inputs": quantized_op_inputs(ours_max),
         "ort_inputs": quantized_op_inputs(ort_model), "variants": {}}
    variants = {"bias_correction_off": ["--bias_correction", "off"]}
    for op in sorted(set(d["ours_inputs"]) - {"Conv", "Gemm", "MatMul"}):
        variants[f"exclude_{op}"] = ["--op_types_to_exclude", op]
    for label, extra in variants.items():
        q = os.path.join(WORK, f"{name}_{dname}_diag.onnx")
        try:
            our_quantize(args.trtutils, fp32, q, calib_npy, "int8", "max", threads, extra)
            d["variants"][label] = sqnr(ref, run_ort(q, held, threads))
        except subprocess.CalledProcessError as e:
            d["variants"][label] = f"failed: {e.stderr.strip().splitlines()[-1:]}"
    return d


def run_model(job):
    args, name, threads, deadline = job
    if time.time() > deadline:
        return name, None, "budget reached before it started"
    try:
        return measure_model(args, name, threads)
    except Exception as e:  # one model's failure leaves the others' rows
        detail = getattr(e, "stderr", "") or ""
        return name, None, f"failed: {e!r} {detail.strip().splitlines()[-1:] if detail else ''}"


def step(name, t0, what):
    """A progress line on stderr, so that a stopped call still shows where it was."""
    print(f"[{time.time() - t0:6.0f} s] {name}: {what}", file=sys.stderr, flush=True)


def measure_model(args, name, threads):
    import onnxruntime  # noqa: F401  (fail early where it is missing)
    os.makedirs(WORK, exist_ok=True)
    fp32 = os.path.join(WORK, name + ".onnx")
    t0 = time.time()
    export(name, fp32)
    step(name, t0, "exported")
    row = {"seconds": {}}
    lines = []
    for dname, (calib, held) in datasets(args.photos, input_size(name),
                                         name != "yolov8n_like").items():
        calib_npy = os.path.join(WORK, f"{name}_calib_{dname}.npy")
        np.save(calib_npy, calib)
        ref = run_ort(fp32, held, threads)
        step(name, t0, f"{dname}: float reference")
        ts = time.time()
        for mode in args.modes:
            methods = OURS if mode == "int8" else args.fp8_methods
            if name in args.only_auto:
                methods = ["auto"] if mode == "int8" else [m for m in methods if m in ("max", "auto")]
            for method in methods:
                q = os.path.join(WORK, f"{name}_{dname}_{mode}_{method}_ours.onnx")
                step(name, t0, f"{dname} {mode} {method}: quantize")
                auto = our_quantize(args.trtutils, fp32, q, calib_npy, mode, method, threads)
                chosen = auto["chosen"] if auto else None
                ours = sqnr(ref, run_ort(q, held, threads))
                theirs = None
                if mode == "int8" and method in ORT and name not in args.only_auto:
                    qo = os.path.join(WORK, f"{name}_{dname}_{method}_ort.onnx")
                    ort_quantize(fp32, qo, calib, method)
                    theirs = sqnr(ref, run_ort(qo, held, threads))
                    if theirs > ours and "diagnosis" not in row.get(dname, {}):
                        row.setdefault(dname, {})["diagnosis"] = diagnose(
                            args, name, fp32, dname, calib_npy, held, ref, threads, qo)
                cell = {"ours": ours, "ort": theirs}
                if chosen:
                    cell["chosen"] = chosen
                    cell["gains_vs_max"] = auto["gains"]
                row.setdefault(dname, {}).setdefault(mode, {})[method] = cell
                lines.append(f"{name:<30} {dname:<7} {mode:<5} {method:<11} {ours:8.2f} "
                             f"{'' if theirs is None else f'{theirs:8.2f}'}"
                             f"{'' if not chosen else '  (auto: ' + chosen + ')'}")
                print(f"[{time.time() - t0:6.0f} s] {lines[-1]}", flush=True)
        row["seconds"][dname] = time.time() - ts
    row["seconds"]["total"] = time.time() - t0
    for f in os.listdir(WORK):
        if f.startswith(name + "_") or f == name + ".onnx":
            os.unlink(os.path.join(WORK, f))
    return name, row, "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--photos", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--modes", nargs="*", default=["int8", "fp8"])
    ap.add_argument("--fp8_methods", nargs="*", default=["max", "auto"])
    ap.add_argument("--only_auto", nargs="*", default=[],
                    help="models measured before: only int8 auto and fp8 max / auto, no ORT")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget_s", type=float, default=480, help="start no model after this")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.json")
    results = json.load(open(results_path)) if os.path.exists(results_path) else {}
    todo = [m for m in args.models if m not in results]
    threads = max(1, os.cpu_count() // max(1, args.workers))
    deadline = time.time() + args.budget_s
    print(f"{'model':<30} {'data':<7} {'mode':<5} {'method':<11} {'ours dB':>8} {'ORT dB':>8}",
          flush=True)
    jobs = [(args, m, threads, deadline) for m in todo]
    if args.workers <= 1:  # in this process: nothing hidden behind a pool
        keep_rows(map(run_model, jobs), results, results_path)
        return 0
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.workers, maxtasksperchild=1) as pool:
        keep_rows(pool.imap_unordered(run_model, jobs), results, results_path)
    return 0


def keep_rows(rows, results, results_path):
    for name, row, text in rows:
        if row is None:
            print(f"{name}: {text}", flush=True)
            continue
        print(text, flush=True)
        results[name] = row
        json.dump(results, open(results_path, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
