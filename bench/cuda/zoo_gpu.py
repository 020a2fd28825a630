#!/usr/bin/env python3
"""GPU engines for the torchvision zoo (issue 29): every model builds with --backend cuda, runs on
the GPU, and matches the CPU backend running the same engine.

Usage (on the GPU machine, torch + torchvision + numpy installed):
  python3 bench/cuda/zoo_gpu.py --trtutils /tmp/d/bin/trtutils --out /tmp/zoo [--json R.json]
      [--precisions fp32,tf32,fp16] [NAME ...]        (default: every model of ZOO below)

Per model: export with random weights (BatchNorm running statistics random, as
tests/e2e/export_models.py gives them; detectors with a score threshold of 0 so they return
boxes), `trtutils build --backend cuda` per precision (the build log's fallback layers are
recorded), `trtutils run` of the engine with --backend cuda and --backend cpu on the same random
input, and the outputs compared: max |gpu - cpu| / max |cpu| and SQNR (dB) per output. Detector
outputs are compared as they come (both sides sort the same scores; a differing box count is
reported). One line per model and precision, and a JSON file.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import export_models as e2e  # noqa: E402  (the model maker: random weights, BatchNorm statistics)

# name -> (torchvision constructor, kind, input shape, constructor kwargs)
ZOO = {
    "resnet18": ("resnet18", "cls", (1, 3, 224, 224), {}),
    "mobilenet_v3_large": ("mobilenet_v3_large", "cls", (1, 3, 224, 224), {}),
    "efficientnet_b0": ("efficientnet_b0", "cls", (1, 3, 224, 224), {}),
    "convnext_tiny": ("convnext_tiny", "cls", (1, 3, 224, 224), {}),
    "swin_t": ("swin_t", "cls", (1, 3, 224, 224), {}),
    "maxvit_t": ("maxvit_t", "cls", (1, 3, 224, 224), {}),
    "fcn_resnet50": ("segmentation.fcn_resnet50", "seg", (1, 3, 224, 224), {"aux_loss": False}),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", "seg",
                                     (1, 3, 224, 224), {"aux_loss": False}),
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp_mobilenet_v3_large", "seg",
                                  (1, 3, 224, 224), {}),
    "ssdlite320_mobilenet_v3_large": ("detection.ssdlite320_mobilenet_v3_large", "det",
                                      (3, 320, 320), {"score_thresh": 0.0}),
    "ssd300_vgg16": ("detection.ssd300_vgg16", "det", (3, 300, 300), {"score_thresh": 0.0}),
    "retinanet_resnet50_fpn": ("detection.retinanet_resnet50_fpn", "det", (3, 320, 320),
                               {"score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "fcos_resnet50_fpn": ("detection.fcos_resnet50_fpn", "det", (3, 320, 320),
                          {"score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        "detection.fasterrcnn_mobilenet_v3_large_320_fpn", "det", (3, 320, 320),
        {"box_score_thresh": 0.0}),
    "maskrcnn_resnet50_fpn": ("detection.maskrcnn_resnet50_fpn", "det", (3, 320, 320),
                              {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "keypointrcnn_resnet50_fpn": ("detection.keypointrcnn_resnet50_fpn", "det", (3, 320, 320),
                                  {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
}


def export(name, out):
    import torch

    ctor, kind, shape, kwargs = ZOO[name]
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        return path
    model = e2e.make_model(ctor, **kwargs)
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(2))
    args = ([x],) if kind == "det" else (x,)
    outputs = None if kind != "seg" else ["out"]
    kw = dict(opset_version=17, input_names=["input"], do_constant_folding=True)
    if outputs:
        kw["output_names"] = outputs
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(model, args, path, **kw)
    return path


def sh(cmd, log):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr + "\n")
    return r, time.time() - t


def compare(gpu_dir, cpu_dir):
    res = {}
    for f in sorted(os.listdir(cpu_dir)):
        if not f.endswith(".npy"):
            continue
        c = np.load(os.path.join(cpu_dir, f)).astype(np.float64)
        g_path = os.path.join(gpu_dir, f)
        if not os.path.exists(g_path):
            res[f[:-4]] = {"error": "missing on the GPU side"}
            continue
        g = np.load(g_path).astype(np.float64)
        if g.shape != c.shape:
            res[f[:-4]] = {"shape_gpu": list(g.shape), "shape_cpu": list(c.shape)}
            continue
        rng = float(np.max(np.abs(c))) if c.size else 0.0
        err = float(np.max(np.abs(g - c))) if c.size else 0.0
        noise = float(np.sum((g - c) ** 2))
        sig = float(np.sum(c ** 2))
        sqnr = 10 * np.log10(sig / noise) if noise > 0 else float("inf")
        res[f[:-4]] = {"shape": list(c.shape), "rel": err / rng if rng > 0 else err,
                       "sqnr": sqnr}
    return res


def ort_outputs(onnx_path, x, out_dir):
    import onnxruntime as ort

    os.makedirs(out_dir, exist_ok=True)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    for meta, value in zip(sess.get_outputs(), sess.run(None, feed)):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", meta.name)  # as `trtutils run` names its files
        np.save(os.path.join(out_dir, name + ".npy"), value)


def fallback_of(log_text):
    return re.findall(r"fallback: (.+)", log_text)


def run_model(args, name):
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    rows = []
    try:
        t = time.time()
        onnx_path = export(name, args.out)
        t_export = time.time() - t
    except Exception as e:  # noqa: BLE001
        return [{"model": name, "error": f"export: {type(e).__name__}: {e}"[:400]}]
    shape = ZOO[name][2]
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    for prec in args.precisions.split(","):
        row = {"model": name, "precision": prec, "export_s": round(t_export, 1)}
        eng = os.path.join(work, prec + ".engine")
        cmd = [args.trtutils, "build", "--onnx", onnx_path, "--output", eng, "--backend", "cuda"]
        if prec == "fp16":
            cmd.append("--fp16")
        elif prec == "fp32":  # exact float32 arithmetic; "tf32": the builder's default
            cmd.append("--no_tf32")
        r, dt = sh(cmd, log)
        row["build_s"] = round(dt, 1)
        row["fallback"] = fallback_of(r.stdout + r.stderr)
        if r.returncode != 0:
            row["error"] = "build: " + (r.stderr.strip().splitlines() or ["?"])[-1][:400]
            rows.append(row)
            continue
        outs = {}
        for be in ("cuda", "cpu"):
            d = os.path.join(work, f"{prec}_{be}")
            os.makedirs(d, exist_ok=True)
            r, dt = sh([args.trtutils, "run", "--engine", eng, "--backend", be, "--input",
                        "input=" + os.path.join(work, "x.npy"), "--output_dir", d], log)
            row[f"run_{be}_s"] = round(dt, 1)
            if r.returncode != 0:
                row["error"] = f"run {be}: " + (r.stderr.strip().splitlines() or ["?"])[-1][:400]
                break
            outs[be] = d
        if "error" not in row:
            row["outputs"] = compare(outs["cuda"], outs["cpu"])
            if args.ort:  # the third opinion: ONNX Runtime (CPU) on the exported model
                ort_dir = os.path.join(work, "ort")
                if not os.path.isdir(ort_dir):
                    ort_outputs(onnx_path, x, ort_dir)
                row["cuda_vs_ort"] = compare(outs["cuda"], ort_dir)
                row["cpu_vs_ort"] = compare(outs["cpu"], ort_dir)
        if "error" not in row and args.bench:
            for be in ("cuda", "cpu"):
                jpath = os.path.join(work, f"{prec}_{be}_bench.json")
                r, _ = sh([args.trtutils, "benchmark", "--engine", eng, "--backend", be,
                           "--input", "input=" + os.path.join(work, "x.npy"), "--iterations",
                           str(args.bench), "--warmup", "3", "--json", jpath], log)
                if r.returncode == 0 and os.path.exists(jpath):
                    row[f"bench_{be}_median_ms"] = bench_median(jpath)
        rows.append(row)
    return rows


def bench_median(path):
    """The median latency (ms) of a `trtutils benchmark --json` file."""
    with open(path) as f:
        j = json.load(f)
    for k in ("median_ms", "latency_median_ms"):
        if k in j:
            return j[k]
    lat = j.get("latency_ms") or j.get("latency") or {}
    return lat.get("median") if isinstance(lat, dict) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--json")
    ap.add_argument("--precisions", default="fp32,tf32,fp16",
                    help="fp32 (--no_tf32), tf32 (the default float build), fp16 (--fp16)")
    ap.add_argument("--ort", action="store_true",
                    help="also compare both sides with ONNX Runtime (CPU) on the exported model")
    ap.add_argument("--bench", type=int, default=0,
                    help="also `trtutils benchmark` each engine on both backends, N iterations")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = args.names or list(ZOO)
    allrows = []
    for n in names:
        for row in run_model(args, n):
            allrows.append(row)
            worst = ""
            if "outputs" in row:
                rels = [o.get("rel", float("nan")) for o in row["outputs"].values()]
                sq = [o.get("sqnr", float("nan")) for o in row["outputs"].values()]
                bad = [k for k, o in row["outputs"].items() if "rel" not in o]
                worst = f"max rel {max(rels):.2e} min SQNR {min(sq):.1f} dB" + (
                    f" MISMATCH {bad}" if bad else "")
            for side in ("cuda_vs_ort", "cpu_vs_ort"):
                if side in row:
                    sq = [o.get("sqnr", float("nan")) for o in row[side].values()]
                    worst += f" | {side} min SQNR {min(sq):.1f} dB"
            print(f"[zoo] {row['model']} {row.get('precision', '')}: "
                  f"{row.get('error', worst)} fallback={len(row.get('fallback', []))}", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(allrows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
