#!/usr/bin/env python3
"""GPU engines for the torchvision zoo (issue 29): every model builds with --backend cuda, runs on
the GPU, and matches the CPU backend running the same engine.

Usage (on the GPU machine, torch + torchvision + numpy + onnxruntime installed):
  python3 bench/cuda/zoo_gpu.py --trtutils /tmp/d/bin/trtutils --out /tmp/zoo [--json R.json]
      [--precisions fp32,fp16,int8] [--kinds cls,seg,det] [--workers N] [--threads N] [--ort]
      [--budget_s S] [--skip a,b] [NAME ...]  (default: every torchvision classification model
                                                and the segmentation / detection set below)

Per model: export with random weights (classification and segmentation: BatchNorm running
statistics from 3 random batches; detectors: the perturbed statistics of
tests/e2e/export_models.py, and a score threshold of 0 so they return boxes), then per precision
`trtutils build --backend cuda` (fp32 `--no_tf32`, fp16 `--fp16`, int8: `trtutils quantize` max
on random calibration samples, then `build --strongly_typed`; the build log's fallback layers are
recorded), `trtutils run` of the engine with --backend cuda and with --backend cpu on the same
random input, and the outputs compared (max |gpu - cpu| / max |cpu|, SQNR in dB); with --ort also
both sides against ONNX Runtime on the model the engine came from. A verdict per row (verdict()),
one line per model and precision, and a JSON file that a later call resumes from.
"""
import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import export_models as e2e  # noqa: E402  (the model maker: random weights, BatchNorm statistics)

# name -> (torchvision constructor, kind, input shape, constructor kwargs). The classification
# zoo is added from torchvision.models.list_models() (every model of the installed torchvision).
SEG_DET = {
    "fcn_resnet50": ("segmentation.fcn_resnet50", "seg", (1, 3, 224, 224), {"aux_loss": False}),
    "fcn_resnet101": ("segmentation.fcn_resnet101", "seg", (1, 3, 224, 224), {"aux_loss": False}),
    "deeplabv3_resnet50": ("segmentation.deeplabv3_resnet50", "seg", (1, 3, 224, 224),
                           {"aux_loss": False}),
    "deeplabv3_resnet101": ("segmentation.deeplabv3_resnet101", "seg", (1, 3, 224, 224),
                            {"aux_loss": False}),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", "seg",
                                     (1, 3, 224, 224), {"aux_loss": False}),
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp_mobilenet_v3_large", "seg",
                                  (1, 3, 224, 224), {}),
    "ssdlite320_mobilenet_v3_large": ("detection.ssdlite320_mobilenet_v3_large", "det",
                                      (3, 320, 320), {"score_thresh": 0.0}),
    "ssd300_vgg16": ("detection.ssd300_vgg16", "det", (3, 300, 300), {"score_thresh": 0.0}),
    "retinanet_resnet50_fpn": ("detection.retinanet_resnet50_fpn", "det", (3, 320, 320),
                               {"score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "retinanet_resnet50_fpn_v2": ("detection.retinanet_resnet50_fpn_v2", "det", (3, 320, 320),
                                  {"score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "fcos_resnet50_fpn": ("detection.fcos_resnet50_fpn", "det", (3, 320, 320),
                          {"score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        "detection.fasterrcnn_mobilenet_v3_large_320_fpn", "det", (3, 320, 320),
        {"box_score_thresh": 0.0}),
    "fasterrcnn_mobilenet_v3_large_fpn": ("detection.fasterrcnn_mobilenet_v3_large_fpn", "det",
                                          (3, 320, 320), {"box_score_thresh": 0.0,
                                                          "min_size": 320, "max_size": 320}),
    "fasterrcnn_resnet50_fpn": ("detection.fasterrcnn_resnet50_fpn", "det", (3, 320, 320),
                                {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "fasterrcnn_resnet50_fpn_v2": ("detection.fasterrcnn_resnet50_fpn_v2", "det", (3, 320, 320),
                                   {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "maskrcnn_resnet50_fpn": ("detection.maskrcnn_resnet50_fpn", "det", (3, 320, 320),
                              {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "maskrcnn_resnet50_fpn_v2": ("detection.maskrcnn_resnet50_fpn_v2", "det", (3, 320, 320),
                                 {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
    "keypointrcnn_resnet50_fpn": ("detection.keypointrcnn_resnet50_fpn", "det", (3, 320, 320),
                                  {"box_score_thresh": 0.0, "min_size": 320, "max_size": 320}),
}
# Classification models whose input is not 224 x 224.
CLS_SIZE = {"inception_v3": 299}
# The largest (export, CPU reference runs): queued last, so that a time budget cuts these.
HEAVY = ["efficientnet_v2_m", "regnet_y_16gf", "regnet_x_16gf", "vgg16", "vgg16_bn", "vgg19",
         "vgg19_bn", "wide_resnet101_2", "resnext101_32x8d", "resnext101_64x4d", "swin_b",
         "swin_v2_b", "convnext_base", "convnext_large", "efficientnet_b6", "efficientnet_b7",
         "efficientnet_v2_l", "regnet_x_32gf", "regnet_y_32gf", "vit_l_32", "vit_l_16",
         "regnet_y_128gf", "vit_h_14"]


def zoo():
    """Every torchvision classification model, then the segmentation and detection set above."""
    import torchvision

    names = {}
    for n in torchvision.models.list_models(module=torchvision.models):
        s = CLS_SIZE.get(n, 224)
        names[n] = (n, "cls", (1, 3, s, s), {})
    names.update(SEG_DET)
    return names


ZOO = {}


def bn_from_batches(model, shape, batches=3):
    """BatchNorm running statistics from a few random batches (so that activations neither vanish
    nor explode with random weights), then eval mode."""
    import torch

    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the batches
    gen = torch.Generator().manual_seed(5)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.rand((4,) + tuple(shape[1:]), generator=gen))
    return model.eval()


def export(name, out):
    import torch

    ctor, kind, shape, kwargs = ZOO[name]
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        return path
    model = e2e.make_model(ctor, **kwargs)
    if kind != "det":  # detectors in train mode want targets: they keep make_model's statistics
        model = bn_from_batches(model, shape)
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(2))
    args = ([x],) if kind == "det" else (x,)
    outputs = None if kind != "seg" else ["out"]
    kw = dict(opset_version=17, input_names=["input"], do_constant_folding=True)
    if outputs:
        kw["output_names"] = outputs
    tmp = path + ".tmp.onnx"
    # torch 2.x runs eval-mode nn.MultiheadAttention as one fused op that the TorchScript
    # exporter cannot write (the ViTs failed so on the H100 machine): the plain path exports.
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(False)
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, tmp, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(model, args, tmp, **kw)
    os.replace(tmp, path)
    return path


def sh(cmd, log, timeout=600):
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        r = subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout} s")
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr + "\n")
    return r, time.time() - t


def sorted_rows(a):
    """a's rows (axis 0) in lexicographic order: detections compared as sets."""
    if a.ndim == 0 or a.shape[0] < 2:
        return a
    rows = a.reshape(a.shape[0], -1)
    return a[np.lexsort(rows.T[::-1])]


def compare(got_dir, ref_dir, sort=False):
    """Per output: max |got - ref| / max |ref| and SQNR (dB) of got against ref (with sort, each
    output's rows sorted first: a detector's boxes as a set, whatever order ties left)."""
    res = {}
    for f in sorted(os.listdir(ref_dir)):
        if not f.endswith(".npy"):
            continue
        c = np.load(os.path.join(ref_dir, f)).astype(np.float64)
        g_path = os.path.join(got_dir, f)
        if not os.path.exists(g_path):
            res[f[:-4]] = {"error": "missing"}
            continue
        g = np.load(g_path).astype(np.float64)
        if g.shape != c.shape:
            res[f[:-4]] = {"shape_got": list(g.shape), "shape_ref": list(c.shape)}
            continue
        if sort:
            g, c = sorted_rows(g), sorted_rows(c)
        rng = float(np.max(np.abs(c))) if c.size else 0.0
        err = float(np.max(np.abs(g - c))) if c.size else 0.0
        noise = float(np.sum((g - c) ** 2))
        sig = float(np.sum(c ** 2))
        sqnr = 10 * np.log10(sig / noise) if noise > 0 else float("inf")
        if sig == 0 and noise > 0:
            sqnr = float("-inf")
        res[f[:-4]] = {"shape": list(c.shape), "rel": err / rng if rng > 0 else err,
                       "sqnr": sqnr}
    return res


def ort_outputs(onnx_path, x, out_dir, threads):
    """ONNX Runtime (CPU, graph optimization basic: the reference for Q/DQ models) outputs."""
    import onnxruntime as ort

    os.makedirs(out_dir, exist_ok=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    for meta, value in zip(sess.get_outputs(), sess.run(None, feed)):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", meta.name)  # as `trtutils run` names its files
        np.save(os.path.join(out_dir, name + ".npy"), value)


def fallback_of(log_text):
    return re.findall(r"fallback: (.+)", log_text)


def last_line(r):
    return (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["?"])[-1][:400]


def worst(res):
    """(max rel, min SQNR, mismatched outputs) over one comparison."""
    rels = [o["rel"] for o in res.values() if "rel" in o]
    sq = [o["sqnr"] for o in res.values() if "sqnr" in o]
    bad = [k for k, o in res.items() if "rel" not in o]
    return (max(rels) if rels else float("nan"), min(sq) if sq else float("nan"), bad)


def verdict(row):
    """The issue's bar: fp32 <= 1e-3 relative, fp16 >= 40 dB against the CPU backend running the
    same engine; int8 GPU/CPU no further apart than our CPU backend and ONNX Runtime on the same
    Q/DQ model (within 1 dB), or >= 40 dB. Detectors count the better of their outputs as they
    come and sorted as sets (ties among random-weight scores may order equal boxes differently)."""
    if "error" in row:
        return "FAIL"
    rel, sq, bad = worst(row["outputs"])
    if "outputs_sorted" in row:  # detections as sets: the better of the two orders
        rel_s, sq_s, _ = worst(row["outputs_sorted"])
        rel, sq = min(rel, rel_s), max(sq, sq_s)
    if bad:
        return "MISMATCH"
    p = row["precision"]
    if p in ("fp32", "tf32"):
        ok = rel <= (1e-3 if p == "fp32" else 5e-3)
    elif p == "fp16":
        ok = sq >= 40
    else:
        ref = worst(row["cpu_vs_ort"])[1] if "cpu_vs_ort" in row else float("inf")
        ok = sq >= min(ref - 1.0, 40.0)
    return "ok" if ok else "FAIL"


def build_engine(args, prec, onnx_path, work, log, row):
    """Builds prec's engine; for int8 first `quantize` (max, random calibration samples) and a
    strongly typed build. Returns (engine path, model the engine came from) or None."""
    eng = os.path.join(work, prec + ".engine")
    src = onnx_path
    t = time.time()
    if prec == "int8":
        src = os.path.join(work, "int8.onnx")
        r, _ = sh([args.trtutils, "quantize", "--onnx", onnx_path, "--output", src,
                   "--calibration_data", os.path.join(work, "calib.npy"), "--quantize_mode",
                   "int8", "--calibration_method", "max", "--batch_size", "1",
                   "--eval_batches", "0", "--no_report_file"], log)
        if r.returncode != 0:
            row["error"] = "quantize: " + last_line(r)
            return None
    cmd = [args.trtutils, "build", "--onnx", src, "--output", eng, "--backend", "cuda"]
    cmd += {"fp16": ["--fp16"], "fp32": ["--no_tf32"], "int8": ["--strongly_typed"]}.get(prec, [])
    r, _ = sh(cmd, log)
    row["build_s"] = round(time.time() - t, 1)
    row["fallback"] = fallback_of(r.stdout + r.stderr)
    if r.returncode != 0:
        row["error"] = "build: " + last_line(r)
        return None
    return eng, src


def progress(name, what, seconds):
    """One line per finished step, so that a call cut off by its time limit still shows where
    the time went (big models: a 480 px EfficientNetV2-M did not finish one precision in 470 s)."""
    print(f"[zoo] .. {name}: {what} in {seconds:.0f} s", flush=True)


def run_precision(args, name, prec, onnx_path, work, log):
    row = {"model": name, "precision": prec}
    built = build_engine(args, prec, onnx_path, work, log, row)
    progress(name, f"{prec} built", row.get("build_s", 0))
    if not built:
        return row
    eng, src = built
    x_path = os.path.join(work, "x.npy")
    outs = {}
    for be in ("cuda", "cpu"):
        d = os.path.join(work, f"{prec}_{be}")
        os.makedirs(d, exist_ok=True)
        cmd = [args.trtutils, "run", "--engine", eng, "--backend", be, "--input",
               "input=" + x_path, "--output_dir", d]
        if be == "cpu":
            cmd += ["--threads", str(args.threads)]
        r, dt = sh(cmd, log)
        row[f"run_{be}_s"] = round(dt, 1)
        progress(name, f"{prec} run on {be}", dt)
        if r.returncode != 0:
            row["error"] = f"run {be}: " + last_line(r)
            return row
        outs[be] = d
    row["outputs"] = compare(outs["cuda"], outs["cpu"])
    if ZOO[name][1] == "det":
        row["outputs_sorted"] = compare(outs["cuda"], outs["cpu"], sort=True)
    if args.ort:  # the third opinion: ONNX Runtime (CPU) on the model the engine came from
        ort_dir = os.path.join(work, "ort_" + ("int8" if prec == "int8" else "float"))
        try:
            if not os.path.isdir(ort_dir):
                ort_outputs(src, np.load(x_path), ort_dir, args.threads)
            row["cuda_vs_ort"] = compare(outs["cuda"], ort_dir)
            row["cpu_vs_ort"] = compare(outs["cpu"], ort_dir)
        except Exception as e:  # noqa: BLE001  (ONNX Runtime refusing a model is a result)
            row["ort_error"] = f"{type(e).__name__}: {e}"[:300]
    row["verdict"] = verdict(row)
    return row


def run_model(args, name):
    import torch

    torch.set_num_threads(args.threads)
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    try:
        t = time.time()
        onnx_path = export(name, args.out)
        t_export = time.time() - t
        progress(name, "exported", t_export)
    except Exception as e:  # noqa: BLE001
        return [{"model": name, "error": f"export: {type(e).__name__}: {e}"[:400],
                 "verdict": "EXPORT"}]
    shape = ZOO[name][2]
    rng = np.random.default_rng(3)
    np.save(os.path.join(work, "x.npy"), rng.random(shape, dtype=np.float32))
    np.save(os.path.join(work, "calib.npy"),
            rng.random((args.calib,) + tuple(shape[1:] if len(shape) == 4 else shape),
                       dtype=np.float32))
    rows = []
    for prec in args.precisions.split(","):
        row = run_precision(args, name, prec, onnx_path, work, log)
        row["export_s"] = round(t_export, 1)
        row.setdefault("verdict", verdict(row))
        rows.append(row)
    return rows


def line_of(row):
    text = row.get("error", "")
    if "outputs" in row:
        rel, sq, bad = worst(row["outputs"])
        text = f"gpu/cpu max rel {rel:.2e} min {sq:.1f} dB" + (f" MISMATCH {bad}" if bad else "")
        if "outputs_sorted" in row:
            text += f" (sorted {worst(row['outputs_sorted'])[1]:.1f} dB)"
        for side in ("cuda_vs_ort", "cpu_vs_ort"):
            if side in row:
                text += f" | {side} {worst(row[side])[1]:.1f} dB"
    return (f"[zoo] {row.get('verdict', '?'):8s} {row['model']} {row.get('precision', '')}: "
            f"{text} fallback={len(row.get('fallback', []))}")


def init_worker(zoo_names):
    ZOO.update(zoo_names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", help="results (models already there are skipped: resumable)")
    ap.add_argument("--precisions", default="fp32,fp16,int8",
                    help="fp32 (--no_tf32), tf32 (the default float build), fp16 (--fp16), "
                         "int8 (quantize max + --strongly_typed)")
    ap.add_argument("--ort", action="store_true",
                    help="also compare both sides with ONNX Runtime (CPU) on the engine's model")
    ap.add_argument("--workers", type=int, default=1, help="models at once")
    ap.add_argument("--threads", type=int, default=4, help="CPU threads per model")
    ap.add_argument("--calib", type=int, default=4, help="random calibration samples (int8)")
    ap.add_argument("--budget_s", type=float, default=1e9,
                    help="start no model after this many seconds")
    ap.add_argument("--kinds", default="cls,seg,det", help="which parts of the zoo")
    ap.add_argument("--skip", default="", help="comma-separated models to leave out")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    ZOO.update(zoo())
    kinds = args.kinds.split(",")
    skip = set(filter(None, args.skip.split(",")))
    names = args.names or [n for n, v in ZOO.items() if v[1] in kinds and n not in skip]
    names.sort(key=lambda n: HEAVY.index(n) + 1 if n in HEAVY else 0)  # stable: heavy last
    allrows = []
    if args.json and os.path.exists(args.json):
        with open(args.json) as f:
            allrows = json.load(f)
    done = {r["model"] for r in allrows}
    todo = [n for n in names if n not in done]
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=init_worker,
                                initargs=(dict(ZOO),)) as pool:
        pending = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < args.workers and time.time() - t0 < args.budget_s:
                n = queue.pop(0)
                pending[pool.submit(run_model, args, n)] = n
            if not pending:
                break
            fin, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in fin:
                n = pending.pop(fut)
                try:
                    rows = fut.result()
                except Exception as e:  # noqa: BLE001
                    rows = [{"model": n, "error": f"worker: {type(e).__name__}: {e}"[:400]}]
                for row in rows:
                    allrows.append(row)
                    print(line_of(row), flush=True)
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump(allrows, f, indent=1)
        if queue:
            print(f"[zoo] budget: {len(queue)} model(s) not started: {' '.join(queue)}")
    counts = {}
    for r in allrows:
        counts[r.get("verdict", "?")] = counts.get(r.get("verdict", "?"), 0) + 1
    print(f"[zoo] {len(allrows)} rows: {counts} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
