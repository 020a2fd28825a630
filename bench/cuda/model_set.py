#!/usr/bin/env python3
"""Issue 31's model set on the GPU machine: trtutils CUDA engines per precision against PyTorch
eager FP16 (channels-last, cudnn.benchmark) and optionally torch.compile, in one call.

Usage (on the GPU machine; dist/ from scripts/make_dist.sh unpacked, LD_LIBRARY_PATH set):
  python3 bench/cuda/model_set.py --trtutils /tmp/d/bin/trtutils --out /tmp/set \
      [--batch 256] [--precisions fp16,int8,fp8] [--workers 2] [--profile] [--torch_compile] \
      [--budget_s 540] [--json R.json] [NAME ...]            (default: the whole SET below)

Per model, phase 1 (up to --workers models at once; CPU-heavy): export with random weights and
BatchNorm statistics (tests/e2e/export_models.py), fixed batch; PyTorch FP32 outputs on the GPU
(TF32 off) for one random input; `trtutils build --backend cuda --fp16`, and for int8 / fp8
`trtutils quantize` (max, max(BATCH, 32) uniform random calibration samples, no report) then
`build --strongly_typed` (fp8 only for the transformers). Phase 2 (one at a time, GPU quiet):
`trtutils benchmark --no_data_transfers` (GPU compute median, as trtexec --noDataTransfers),
PyTorch eager FP16 median of 20 runs, `trtutils run` on the same input and SQNR against the
PyTorch FP32 output (speed never from a wrong answer). --profile adds the per-layer analysis
(profile_analysis.py) per engine. Results accumulate in --json (models already there are skipped,
so several calls cover the set); the summary table and the geometric means are printed at the end.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.path.append(HERE)  # yolo_bench (after tests/e2e: bench/cuda has its own export_models)

# name -> (torchvision constructor or "yolo", C, H, W, transformer)
SET = {
    "resnet50": ("resnet50", 3, 224, 224, False),
    "resnext50_32x4d": ("resnext50_32x4d", 3, 224, 224, False),
    "wide_resnet50_2": ("wide_resnet50_2", 3, 224, 224, False),
    "densenet121": ("densenet121", 3, 224, 224, False),
    "mobilenet_v2": ("mobilenet_v2", 3, 224, 224, False),
    "mobilenet_v3_large": ("mobilenet_v3_large", 3, 224, 224, False),
    "efficientnet_b0": ("efficientnet_b0", 3, 224, 224, False),
    "efficientnet_v2_s": ("efficientnet_v2_s", 3, 224, 224, False),
    "regnet_y_1_6gf": ("regnet_y_1_6gf", 3, 224, 224, False),
    "convnext_tiny": ("convnext_tiny", 3, 224, 224, False),
    "vit_b_16": ("vit_b_16", 3, 224, 224, True),
    "swin_t": ("swin_t", 3, 224, 224, True),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", 3, 224, 224,
                                     False),
    "yolov8_like": ("yolo", 3, 640, 640, False),
}


def make_torch(name):
    ctor = SET[name][0]
    if ctor == "yolo":
        import yolo_bench
        return yolo_bench.make_model()
    import export_models as e2e
    extra = {"aux_loss": False} if ctor.startswith("segmentation.") else {}
    return e2e.make_model(ctor, **extra)


def first_output(y):
    if isinstance(y, dict):
        y = y["out"]
    if isinstance(y, (list, tuple)):
        y = y[0]
    return y


def sqnr_db(ref, got):
    ref = ref.astype(np.float64).ravel()
    got = got.astype(np.float64).ravel()
    if ref.shape != got.shape:
        return float("nan")
    err = np.sum((ref - got) ** 2)
    return float("inf") if err == 0 else float(10 * math.log10(np.sum(ref ** 2) / err))


def sh(cmd, log):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}[rc {r.returncode}, "
                f"{time.perf_counter() - t0:.1f} s]\n")
    return r


def prepare(args, name):
    """Phase 1 for one model: ONNX, input, FP32 reference, engines. Returns a partial record."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    _, c, h, w, transformer = SET[name]
    d = os.path.join(args.out, name)
    os.makedirs(d, exist_ok=True)
    log = os.path.join(d, "log.txt")
    rec = {"model": name, "batch": args.batch, "engines": {}}
    onnx_path = os.path.join(d, "model.onnx")
    x = np.random.default_rng(2).random((args.batch, c, h, w), dtype=np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    # Calibration: one batch, but at least 32 samples (batch 1: 32 batches of one).
    n_cal = args.batch * max(1, -(-32 // args.batch))
    np.save(os.path.join(d, "calib.npy"),
            np.random.default_rng(3).random((n_cal, c, h, w), dtype=np.float32))
    t0 = time.perf_counter()
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a smoke test off the GPU machine
    model = make_torch(name)
    # torch 2.x runs eval-mode nn.MultiheadAttention as one fused op that the TorchScript
    # exporter cannot write (ViT-B/16's export failed so): the plain path exports.
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(False)
    with torch.no_grad():
        # Exported on the CPU: torch 2.11's tracer killed the process exporting ViT-B/16 on CUDA.
        kw = dict(opset_version=17, input_names=["input"], do_constant_folding=True)
        xc = torch.from_numpy(x[:1].repeat(args.batch, axis=0))
        try:
            torch.onnx.export(model, (xc,), onnx_path, dynamo=False, **kw)
        except TypeError:  # torch before 2.5 (Debian's): no dynamo argument
            torch.onnx.export(model, (xc,), onnx_path, **kw)
        model = model.to(dev)
        ref = first_output(model(torch.from_numpy(x).to(dev)))
        np.save(os.path.join(d, "ref.npy"), ref.float().cpu().numpy())
    rec["export_s"] = round(time.perf_counter() - t0, 1)
    del model, ref
    if dev == "cuda":  # the builds below time kernels on the same GPU: give its memory back
        torch.cuda.empty_cache()
    T = args.trtutils
    for prec in args.precisions:
        if prec == "fp8" and not transformer:
            continue
        eng = os.path.join(d, f"{prec}.engine")
        t0 = time.perf_counter()
        if prec == "fp16":
            r = sh([T, "build", "--onnx", onnx_path, "--output", eng, "--backend", "cuda",
                    "--fp16"], log)
        else:
            qdq = os.path.join(d, f"{prec}.onnx")
            r = sh([T, "quantize", "--onnx", onnx_path, "--output", qdq, "--calibration_data",
                    os.path.join(d, "calib.npy"), "--quantize_mode", prec,
                    "--calibration_method", "max", "--batch_size", str(args.batch),
                    "--eval_batches", "0", "--no_report_file"], log)
            if r.returncode == 0:
                r = sh([T, "build", "--onnx", qdq, "--output", eng, "--backend", "cuda",
                        "--strongly_typed"], log)
        e = {"build_s": round(time.perf_counter() - t0, 1)}
        if r.returncode:
            e["error"] = (r.stderr.strip().splitlines() or ["?"])[-1][:300]
        fb = re.findall(r"fallback: ([^\n]*)", r.stdout + r.stderr)
        if fb:
            e["fallback"] = fb[:3]
        rec["engines"][prec] = e
    return rec


def prepare_in_process(args, name):
    """prepare() in a process of its own (a crash, as torch's exporter had on ViT-B/16, costs
    that model only; CUDA state stays out of this process)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--trtutils", args.trtutils, "--out",
           args.out, "--batch", str(args.batch), "--precisions", ",".join(args.precisions),
           "--prepare_one", name]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.prepare_timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"phase 1 took more than {args.prepare_timeout_s:.0f} s") from None
    path = os.path.join(args.out, name, "prepared.json")
    if r.returncode == 0 and os.path.exists(path):
        return json.load(open(path))
    tail = (r.stderr.strip().splitlines() or ["?"])[-1]
    raise RuntimeError(f"phase 1 exited {r.returncode}: {tail}")


def torch_time(name, batch, compile_too):
    import torch
    torch.backends.cudnn.benchmark = True
    _, c, h, w, _ = SET[name]
    m = make_torch(name).cuda().half().to(memory_format=torch.channels_last)
    x = torch.randn(batch, c, h, w, device="cuda").half().to(memory_format=torch.channels_last)

    def timed(f):
        with torch.inference_mode():
            for _ in range(5):
                f(x)
            torch.cuda.synchronize()
            ts = []
            for _ in range(20):
                t0 = time.perf_counter()
                f(x)
                torch.cuda.synchronize()
                ts.append(time.perf_counter() - t0)
        return sorted(ts)[len(ts) // 2] * 1000

    out = {"eager_fp16_ms": round(timed(m), 3)}
    if compile_too:
        t0 = time.perf_counter()
        cm = torch.compile(m, mode="max-autotune-no-cudagraphs")
        try:
            with torch.inference_mode():
                cm(x)
            out["compile_s"] = round(time.perf_counter() - t0, 0)
            out["compile_fp16_ms"] = round(timed(cm), 3)
        except Exception as ex:  # noqa: BLE001  (a model torch.compile cannot take)
            out["compile_error"] = str(ex)[:200]
    del m
    torch.cuda.empty_cache()
    return out


def measure(args, rec):
    """Phase 2 for one model: engine timings, outputs against FP32, the PyTorch peer."""
    d = os.path.join(args.out, rec["model"])
    log = os.path.join(d, "log.txt")
    ref = np.load(os.path.join(d, "ref.npy"))
    T = args.trtutils
    for prec, e in rec["engines"].items():
        eng = os.path.join(d, f"{prec}.engine")
        if "error" in e or not os.path.exists(eng):
            continue
        js = os.path.join(d, f"{prec}.bench.json")
        r = sh([T, "benchmark", "--engine", eng, "--iterations", "20", "--warmup_iterations", "3",
                "--no_data_transfers", "--json", js], log)
        if r.returncode == 0:
            b = json.load(open(js))
            e["gpu_ms"] = round(b["compute_ms"], 3)
            e["p99_ms"] = round(b["p99_ms"], 3)
        od = os.path.join(d, f"{prec}_out")
        os.makedirs(od, exist_ok=True)
        r = sh([T, "run", "--engine", eng, "--input", f"input={os.path.join(d, 'x.npy')}",
                "--output_dir", od], log)
        outs = sorted(f for f in os.listdir(od) if f.endswith(".npy"))
        if r.returncode == 0 and outs:
            got = np.load(os.path.join(od, outs[0]))
            e["sqnr_vs_torch_fp32_db"] = round(sqnr_db(ref, got), 2)
        if args.profile:
            ij, pj = os.path.join(d, f"{prec}.inspect.json"), os.path.join(d, f"{prec}.prof.json")
            with open(ij, "w") as f:
                subprocess.run([T, "inspect", "--engine", eng, "--json"], stdout=f,
                               stderr=subprocess.DEVNULL)
            sh([T, "benchmark", "--engine", eng, "--iterations", "5", "--warmup_iterations", "2",
                "--profile", "--no_data_transfers", "--json", pj], log)
            with open(os.path.join(args.out, f"profile_{rec['model']}_{prec}.txt"), "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "profile_analysis.py"), ij, pj,
                                "--batch", str(args.batch)], stdout=f, stderr=subprocess.STDOUT)
    rec.update(torch_time(rec["model"], args.batch, args.torch_compile))
    return rec


def summary(results, precisions):
    cols = ["fp16", "int8", "fp8"]
    cols = [c for c in cols if c in precisions]
    print("\nmodel | eager fp16 ms | " + " | ".join(f"{c} ms (x eager, dB)" for c in cols) +
          " | best x eager | int8 / fp16")
    best_ratios, int8_vs_fp16, compile_ratios = [], [], []
    for name in SET:
        r = results.get(name)
        if not r:
            continue
        cells, best = [], None
        for c in cols:
            e = r["engines"].get(c)
            if not e or "gpu_ms" not in e:
                cells.append("-" if not e else ("error" if "error" in e else "?"))
                continue
            x = r["eager_fp16_ms"] / e["gpu_ms"]
            best = e["gpu_ms"] if best is None else min(best, e["gpu_ms"])
            cells.append(f"{e['gpu_ms']:.2f} ({x:.2f}x, {e.get('sqnr_vs_torch_fp32_db', '?')})")
        f16 = r["engines"].get("fp16", {}).get("gpu_ms")
        low = [r["engines"].get(c, {}).get("gpu_ms") for c in ("int8", "fp8")]
        low = [v for v in low if v]
        rel = f"{f16 / min(low):.2f}" if f16 and low else "-"
        if f16 and low:
            int8_vs_fp16.append(f16 / min(low))
        bx = "-"
        if best:
            best_ratios.append(r["eager_fp16_ms"] / best)
            bx = f"{best_ratios[-1]:.2f}"
            if "compile_fp16_ms" in r:
                compile_ratios.append(r["compile_fp16_ms"] / best)
        print(f"{name} | {r['eager_fp16_ms']:.2f} | " + " | ".join(cells) + f" | {bx} | {rel}")

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
    print(f"\ngeometric mean, best of ours / eager fp16: {gm(best_ratios):.3f} over "
          f"{len(best_ratios)} models (goal 2.0); min {min(best_ratios, default=float('nan')):.2f}")
    if compile_ratios:
        print(f"geometric mean, best of ours / torch.compile: {gm(compile_ratios):.3f} over "
              f"{len(compile_ratios)} models (goal 1.3)")
    print(f"quantized speed-up over our fp16 (fp16 ms / best quantized ms): geometric mean "
          f"{gm(int8_vs_fp16):.3f}, min {min(int8_vs_fp16, default=float('nan')):.2f} "
          f"(goal >= 1.25 on every model)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--precisions", default="fp16,int8,fp8")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--torch_compile", action="store_true")
    ap.add_argument("--budget_s", type=float, default=1e9, help="start no model after this")
    ap.add_argument("--prepare_timeout_s", type=float, default=900,
                    help="phase 1 of one model is stopped after this")
    ap.add_argument("--json")
    ap.add_argument("--prepare_one", help=argparse.SUPPRESS)  # phase 1 of one model, own process
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    args.precisions = args.precisions.split(",")
    os.makedirs(args.out, exist_ok=True)
    if args.prepare_one:
        rec = prepare(args, args.prepare_one)
        json.dump(rec, open(os.path.join(args.out, args.prepare_one, "prepared.json"), "w"))
        return
    js = args.json or os.path.join(args.out, "model_set.json")
    results = json.load(open(js)) if os.path.exists(js) else {}
    todo = [m for m in (args.models or list(SET)) if m not in results]
    start = time.perf_counter()
    prepared = {}
    with cf.ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(prepare_in_process, args, m): m for m in todo}
        for f in cf.as_completed(futures):
            m = futures[f]
            try:
                prepared[m] = f.result()
            except Exception as ex:  # noqa: BLE001  (one model's failure is a row, not the end)
                prepared[m] = {"model": m, "error": str(ex)[:300], "engines": {}}
            print(f"[prepared] {m} at {time.perf_counter() - start:.0f} s", flush=True)
            if time.perf_counter() - start > args.budget_s:
                print("[budget] no more models prepared", flush=True)
                for g in futures:
                    g.cancel()
                break
    for m in todo:  # phase 2 in set order, the GPU quiet
        if m not in prepared:
            continue
        rec = prepared[m]
        try:
            if "error" not in rec:
                rec = measure(args, rec)
        except Exception as ex:  # noqa: BLE001
            rec["error"] = str(ex)[:300]
        results[m] = rec
        print(json.dumps(rec), flush=True)
        json.dump(results, open(js, "w"), indent=1)
    summary({k: v for k, v in results.items() if v.get("eager_fp16_ms")}, args.precisions)


if __name__ == "__main__":
    main()
