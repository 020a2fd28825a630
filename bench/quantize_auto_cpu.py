#!/usr/bin/python3
"""calibration_method auto against every single method, judged by our own CPU engine (issue 35).

For each model (torchvision, random weights, BatchNorm running statistics from 3 random batches:
bench/quantize_vs_ort.py's export) and each mode, runs `trtutils quantize` once per method on
the photos (ImageNet mean/std), batch 1, `--eval_batches 8`: the last 8 photos are held out and
judge (our quantize report: the Q/DQ model on our CPU backend against the float model, not ONNX
Runtime), the others calibrate; `auto` holds out its own selection samples among those.

    /usr/bin/python3 bench/quantize_auto_cpu.py --trtutils BIN --photos photos_u8.npy --out DIR
        [--models ...] [--modes int8 fp8] [--fp8_methods max auto] [--threads 2]

photos_u8.npy: uint8 [N, 3, 224, 224]. Prints one Markdown row per model and mode, writes
DIR/results.json (a second call with the same DIR skips what is there).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quantize_vs_ort import MEAN, STD, export  # noqa: E402

METHODS = ["max", "entropy", "percentile", "mse", "auto"]


def quantize(args, fp32, calib, mode, method):
    out = os.path.join(args.out, "q.onnx")
    cmd = [args.trtutils, "quantize", "--onnx", fp32, "--output", out, "--calibration_data",
           calib, "--quantize_mode", mode, "--calibration_method", method, "--eval_batches", "8",
           "--batch_size", "1", "--threads", str(args.threads)]
    if method == "auto":  # the per-candidate, per-sample scores, for rules tried offline
        cmd.insert(1, "-vv")
    t0 = time.time()
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    rep = json.load(open(out + ".report.json"))
    row = {"sqnr": rep["outputs"][0]["sqnr_db"], "seconds": round(time.time() - t0, 1)}
    if method == "auto":
        row["chosen"] = rep["calibration_method_chosen"]
        row["scores"] = rep["calibration_method_scores"]
        row["selection_samples"] = rep["auto_selection_samples"]
        row["selection_held_out"] = rep["auto_selection_held_out"]
        row["stdout"] = [l for l in r.stdout.splitlines() if "auto" in l]
        row["batch_db"] = {
            m.group(1): [float(v) for v in m.group(2).split()]
            for m in re.finditer(r"calibration_method auto: (\w+) worst batch .*? batches \[([^\]]*)\]",
                                 r.stdout + r.stderr)}
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--photos", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="+",
                    default=["mobilenet_v3_large", "mobilenet_v2", "efficientnet_b0", "resnet50"])
    ap.add_argument("--modes", nargs="+", default=["int8", "fp8"])
    ap.add_argument("--fp8_methods", nargs="+", default=["max", "auto"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    res_path = os.path.join(args.out, "results.json")
    results = json.load(open(res_path)) if os.path.exists(res_path) else {}
    p = np.load(args.photos).astype(np.float32) / 255.0
    calib = os.path.join(args.out, "photos.npy")
    np.save(calib, np.ascontiguousarray((p - MEAN) / STD, dtype=np.float32))
    for name in args.models:
        fp32 = os.path.join(args.out, name + ".onnx")
        if not os.path.exists(fp32):
            export(name, fp32)
        for mode in args.modes:
            key = f"{name}/{mode}"
            rows = results.setdefault(key, {})
            for method in METHODS if mode == "int8" else args.fp8_methods:
                if method not in rows:
                    rows[method] = quantize(args, fp32, calib, mode, method)
                    json.dump(results, open(res_path, "w"), indent=1)
                print(key, method, rows[method], flush=True)
    print("| model | mode | " + " | ".join(METHODS) + " | auto - best single |")
    print("|" + " --- |" * (len(METHODS) + 3))
    for key, rows in results.items():
        single = [rows[m]["sqnr"] for m in METHODS[:-1] if m in rows]
        cells = [f"{rows[m]['sqnr']:.2f}" if m in rows else "-" for m in METHODS]
        if "auto" in rows:
            cells[-1] += f" ({rows['auto']['chosen']})"
        gap = rows["auto"]["sqnr"] - max(single) if "auto" in rows and single else float("nan")
        print(f"| {key.split('/')[0]} | {key.split('/')[1]} | " + " | ".join(cells) +
              f" | {gap:+.2f} |")


if __name__ == "__main__":
    main()
