#!/usr/bin/env python3
"""Issue 30's speed check: a YOLOv8-shaped detector at 640x640, from images to boxes, with NMS
inside our engine (`build_yolo --backend cuda`) against PyTorch eager FP16 + torchvision's
batched_nms in the same run, on the GPU machine.

Usage: python3 bench/cuda/yolo_bench.py --trtutils dist/bin/trtutils --out /tmp/yolo
           [--batches 1,32] [--precisions fp16,int8,int8_qdq] [--iterations 100]

Precisions: fp16 (build_yolo --fp16), int8 (weakly typed: --int8 --fp16 with calibration on
16 random images), int8_qdq (`trtutils quantize` to a Q/DQ ONNX, the head's decode kept in
float, then build_yolo --strongly_typed).

Two measurements per engine:
  engine  `trtutils benchmark` (host float32 images in, the NMS outputs out; copies + compute),
          against PyTorch fed the same float32 tensor;
  e2e     from decoded images to boxes: `trtutils detect --iterations` on 32 decoded 1280x720
          photos-sized images (8-bit, letterboxed to 640 on the GPU, engine, NMS, results on the
          host; decoding excluded), against PyTorch doing the same from the same uint8 images in
          pinned memory (upload, bilinear resize to 640x360, pad with 114, scale, model, NMS).

The model (random weights, BatchNorm statistics from a few random batches): a CSP-style backbone
(Conv-BN-SiLU, residual bottleneck blocks, an SPPF-like pooling block) with YOLOv8n's widths
(16-256 channels), three levels at strides 8 / 16 / 32 (8400 anchors at 640), an anchor-free
head per level (box branch with DFL over 16 bins, class branch, 80 classes), output
[N, 84, 8400] as YOLOv8 exports it. Ours: `trtutils benchmark` of the build_yolo engine (host
float32 images in, num_dets / boxes / scores / classes out; latency = copies + compute).
PyTorch: the same module in half precision on the GPU, the float32 images copied from pinned
host memory, decoded, thresholded at 0.25, batched_nms (IoU 0.5) per image, the first 100 boxes
copied back; timed with CUDA synchronisation around each iteration. Medians and p99 in ms.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision

REG_MAX = 16
NUM_CLASSES = 80
IMG = 640


def cbs(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.b = cbs(c, c), cbs(c, c)

    def forward(self, x):
        return x + self.b(self.a(x))


class C2f(nn.Module):
    def __init__(self, cin, cout, n):
        super().__init__()
        self.c = cout // 2
        self.cv1 = cbs(cin, 2 * self.c, 1)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))
        self.cv2 = cbs((2 + n) * self.c, cout, 1)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = cbs(c, c // 2, 1), cbs(c * 2, c, 1)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YoloV8n(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = nn.Sequential(cbs(3, 16, 3, 2), cbs(16, 32, 3, 2), C2f(32, 32, 1),
                                cbs(32, 64, 3, 2), C2f(64, 64, 2))  # stride 8
        self.b1 = nn.Sequential(cbs(64, 128, 3, 2), C2f(128, 128, 2))  # 16
        self.b2 = nn.Sequential(cbs(128, 256, 3, 2), C2f(256, 256, 1), SPPF(256))  # 32
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n1 = C2f(256 + 128, 128, 1)
        self.n0 = C2f(128 + 64, 64, 1)
        chans = (64, 128, 256)
        self.box = nn.ModuleList(nn.Sequential(cbs(c, 64), cbs(64, 64), nn.Conv2d(64, 4 * REG_MAX, 1))
                                 for c in chans)
        self.cls = nn.ModuleList(nn.Sequential(cbs(c, 80), cbs(80, 80), nn.Conv2d(80, NUM_CLASSES, 1))
                                 for c in chans)
        self.dfl = nn.Conv2d(REG_MAX, 1, 1, bias=False)
        self.dfl.weight.data[:] = torch.arange(REG_MAX, dtype=torch.float32).view(1, REG_MAX, 1, 1)
        self.dfl.weight.requires_grad_(False)
        pts, strides = [], []
        for s in (8, 16, 32):
            n = IMG // s
            ys, xs = torch.meshgrid(torch.arange(n, dtype=torch.float32) + 0.5,
                                    torch.arange(n, dtype=torch.float32) + 0.5, indexing="ij")
            pts.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], 1))
            strides.append(torch.full((n * n, 1), float(s)))
        self.register_buffer("points", torch.cat(pts).t().unsqueeze(0))
        self.register_buffer("strides", torch.cat(strides).t().unsqueeze(0))

    def forward(self, x):
        p3 = self.b0(x)
        p4 = self.b1(p3)
        p5 = self.b2(p4)
        f4 = self.n1(torch.cat([self.up(p5), p4], 1))
        f3 = self.n0(torch.cat([self.up(f4), p3], 1))
        feats = (f3, f4, p5)
        n = x.shape[0]
        box = torch.cat([b(f).flatten(2) for b, f in zip(self.box, feats)], 2)
        cls = torch.cat([c(f).flatten(2) for c, f in zip(self.cls, feats)], 2)
        a = box.shape[2]
        d = self.dfl(box.view(n, 4, REG_MAX, a).transpose(2, 1).softmax(1)).view(n, 4, a)
        x1y1 = (self.points - d[:, :2]) * self.strides
        x2y2 = (self.points + d[:, 2:]) * self.strides
        return torch.cat([(x1y1 + x2y2) / 2, x2y2 - x1y1, cls.sigmoid()], 1)  # [N, 84, A]


def make_model():
    torch.manual_seed(0)
    m = YoloV8n()
    # Class biases as Ultralytics initialises them (log(5 / nc / (640 / stride)^2)): few scores
    # pass 0.25, as with a trained detector, instead of every sigmoid of a random logit (~0.5).
    import math
    for seq, s in zip(m.cls, (8, 16, 32)):
        seq[-1].bias.data[:] = math.log(5 / NUM_CLASSES / (IMG / s) ** 2)
    m.train()
    with torch.no_grad():  # BatchNorm statistics of a few random batches
        for _ in range(3):
            m(torch.rand(2, 3, IMG, IMG))
    return m.eval()


def time_steps(step, iterations):
    """Median and p99 in ms of `step` after 10 warm-up calls, synchronised per iteration."""
    with torch.no_grad():
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        ms = []
        for _ in range(iterations):
            t = time.perf_counter()
            step()
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ms)), float(np.percentile(ms, 99))


def nms_one(o, conf, iou, top_k):
    """One image's [A, 84] head output -> (corner boxes, scores, classes) kept by batched_nms."""
    boxes, scores = o[:, :4], o[:, 4:]
    xyxy = torch.cat([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], 1)
    idx, cls = (scores >= conf).nonzero(as_tuple=True)
    keep = torchvision.ops.batched_nms(xyxy[idx], scores[idx, cls], cls, iou)[:top_k]
    return xyxy[idx][keep], scores[idx, cls][keep], cls[keep]


def torch_bench(model, batch, iterations, conf=0.25, iou=0.5, top_k=100):
    dev = torch.device("cuda")
    m = model.to(dev).half()
    host = torch.rand(batch, 3, IMG, IMG).pin_memory()

    def step():
        x = host.to(dev, non_blocking=True).half()
        out = m(x).float().transpose(1, 2)  # [N, A, 84]
        return [tuple(t.cpu() for t in nms_one(out[i], conf, iou, top_k)) for i in range(batch)]

    return time_steps(step, iterations)


def torch_bench_e2e(model, batch, iterations, images, conf=0.25, iou=0.5, top_k=100, pinned=False):
    """From uint8 HWC images to boxes, preprocessing on the GPU. The images are in ordinary
    (pageable) memory as a decoder leaves them, as for ours; pinned=True copies them into
    page-locked memory first, outside the timing (PyTorch's best case)."""
    import torch.nn.functional as F
    dev = torch.device("cuda")
    m = model.to(dev).half()
    h0, w0 = images.shape[1], images.shape[2]
    r = min(IMG / h0, IMG / w0)
    nh, nw = round(h0 * r), round(w0 * r)
    top, left = (IMG - nh) // 2, (IMG - nw) // 2
    host = torch.from_numpy(np.ascontiguousarray(images[:batch]))
    if pinned:
        host = host.pin_memory()

    def step():
        x = host.to(dev, non_blocking=pinned).permute(0, 3, 1, 2).float()
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False)
        x = F.pad(x, (left, IMG - nw - left, top, IMG - nh - top), value=114.0)
        out = m((x / 255.0).half()).float().transpose(1, 2)
        res = []
        for img in range(batch):
            b, sc, cl = nms_one(out[img], conf, iou, top_k)
            b[:, [0, 2]] = (b[:, [0, 2]] - left) / r
            b[:, [1, 3]] = (b[:, [1, 3]] - top) / r
            res.append((b.cpu(), sc.cpu(), cl.cpu()))
        return res

    return time_steps(step, iterations)


def write_images(folder, count, h=720, w=1280):
    """Photo-sized images: smooth random colour fields plus noise, as PNG (via torchvision)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(3)
    arr = np.empty((count, h, w, 3), np.uint8)
    for i in range(count):
        small = torch.from_numpy(rng.random((1, 3, h // 40, w // 40), dtype=np.float32))
        big = torch.nn.functional.interpolate(small, size=(h, w), mode="bilinear")[0]
        img = (big * 200 + torch.from_numpy(rng.random((3, h, w), dtype=np.float32)) * 55)
        chw = img.clamp(0, 255).to(torch.uint8)
        torchvision.io.write_png(chw, os.path.join(folder, f"img{i:03d}.png"))
        arr[i] = chw.permute(1, 2, 0).numpy()
    return arr


def build_engine(args, onnx_path, calib, batch, prec):
    eng = os.path.join(args.out, f"b{batch}_{prec}.engine")
    shape = f"images:{batch},3,{IMG},{IMG}"
    base = [args.trtutils, "build_yolo", "--output", eng, "--backend", "cuda", "--num_classes",
            "80", "--shape", shape]
    if prec == "int8_qdq":
        qdq = os.path.join(args.out, "yolov8n_like_qdq.onnx")
        if not os.path.exists(qdq):
            r = subprocess.run([args.trtutils, "quantize", "--onnx", onnx_path, "--output", qdq,
                                "--calibration_data", calib, "--quantize_mode", "int8",
                                "--calibration_method", "max"], capture_output=True, text=True)
            if r.returncode:
                return None, (r.stderr.strip().splitlines() or ["?"])[-1]
            print("\n".join(l for l in r.stdout.splitlines() if "detection head" in l), flush=True)
        cmd = base + ["--onnx", qdq, "--strongly_typed"]
    else:
        cmd = base + ["--onnx", onnx_path, "--fp16"]
        if prec == "int8":
            cmd += ["--int8", "--calibration_data", calib]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return eng, None


def measure_e2e(args, eng, images_dir, batch, count):
    passes = max(3, args.iterations * batch // count)
    out = os.path.join(args.out, f"detect_{os.path.basename(eng)}")
    r = subprocess.run([args.trtutils, "detect", "--engine", eng, "--input", images_dir,
                        "--output", out, "--iterations", str(passes), "--warmup", "3"],
                       capture_output=True, text=True)
    if r.returncode:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    t = json.load(open(os.path.join(out, "timing.json")))
    return {k: t[k] for k in ("median_ms", "p99_ms", "images_per_s", "gpu_preprocessing")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trtutils", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp16,int8,int8_qdq")
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = make_model()
    onnx_path = os.path.join(args.out, "yolov8n_like.onnx")
    kw = dict(opset_version=17, input_names=["images"], output_names=["output0"],
              dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}})
    try:
        torch.onnx.export(model, torch.rand(1, 3, IMG, IMG), onnx_path, dynamo=False, **kw)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, torch.rand(1, 3, IMG, IMG), onnx_path, **kw)
    calib = os.path.join(args.out, "calib.npy")
    np.save(calib, np.random.default_rng(1).random((16, 3, IMG, IMG), dtype=np.float32))
    count = 32
    images = write_images(os.path.join(args.out, "images"), count)
    rows = []
    for batch in [int(b) for b in args.batches.split(",")]:
        t_med, t_p99 = torch_bench(make_model(), batch, args.iterations)
        e_med, e_p99 = torch_bench_e2e(make_model(), batch, args.iterations, images)
        p_med, p_p99 = torch_bench_e2e(make_model(), batch, args.iterations, images, pinned=True)
        row = {"batch": batch,
               "torch_eager_fp16_nms": {"median_ms": t_med, "p99_ms": t_p99,
                                        "images_per_s": batch * 1e3 / t_med},
               "torch_eager_fp16_e2e": {"median_ms": e_med, "p99_ms": e_p99,
                                        "images_per_s": batch * 1e3 / e_med},
               "torch_eager_fp16_e2e_pinned": {"median_ms": p_med, "p99_ms": p_p99,
                                               "images_per_s": batch * 1e3 / p_med}}
        for prec in args.precisions.split(","):
            eng, err = build_engine(args, onnx_path, calib, batch, prec)
            if err:
                row[prec] = {"error": err}
                continue
            js = os.path.join(args.out, f"b{batch}_{prec}.json")
            r = subprocess.run([args.trtutils, "benchmark", "--engine", eng, "--iterations",
                                str(args.iterations), "--warmup", "10", "--json", js],
                               capture_output=True, text=True)
            if r.returncode:
                row[prec] = {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
                continue
            b = json.load(open(js))
            row[prec] = {k: b[k] for k in ("median_ms", "p99_ms", "compute_ms", "h2d_ms", "d2h_ms")}
            row[prec]["images_per_s"] = batch * 1e3 / b["median_ms"]
            row[prec]["vs_torch"] = t_med / b["median_ms"]
            e2e = measure_e2e(args, eng, os.path.join(args.out, "images"), batch, count)
            if "median_ms" in e2e:
                e2e["vs_torch_e2e"] = e_med / e2e["median_ms"]
            row[prec + "_e2e"] = e2e
        rows.append(row)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
