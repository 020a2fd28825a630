#!/usr/bin/env python3
"""End-to-end check of `trtutils build_yolo`: tiny YOLO-style detectors (random weights) built
with NMS inside the engine and run with `trtutils run`, against torchvision.ops.batched_nms on
the raw head output computed by PyTorch.

    /usr/bin/python3 tests/e2e/yolo_nms_e2e.py --trtutils build/bin/trtutils [--work DIR]
        [--backend cpu|cuda]

Models (input "images" [N, 3, 64, 64], 3 classes, strides 8/16/32):
  yolov8        YOLOv8-style anchor-free head: per level a box branch with DFL (softmax over 8
                bins, expectation by a fixed 1x1 conv) and a class branch; output [N, 4+C, A]
                with (cx, cy, w, h) in pixels and sigmoid class scores. Opset 13, dynamic batch.
  yolov5        YOLOv5-style anchor-based head (3 anchors per cell): output [N, A, 5+C] with
                objectness. Opset 11 (Split's sizes as an attribute).
  boxes_scores  the YOLOv8 model exporting two outputs, corner boxes [N, A, 4] and scores
                [N, A, C] (build_yolo --box_coding corner).
BatchNorm statistics come from a few random batches (train mode), then eval.

Reference per image: candidates (anchor, class) with score >= conf_threshold (EfficientNMS keeps
a score equal to the threshold), batched_nms per class (or one class when agnostic) on corner
boxes, the first top_k kept. batched_nms drops IoU > threshold where EfficientNMS drops >=: the
same on these continuous random values. Checked: num_dets equal; classes equal; scores and boxes
within rtol 1e-4 of max |reference|. A reference whose decisions lie within 1e-5 of a threshold,
or whose kept scores tie within 1e-6, would be fragile: the script says so and fails, so seeds
stay honest.

Exit 0 passed, 1 a mismatch, 2 a tool failed, 77 skipped (no torch / torchvision / onnx).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torchvision
except Exception as e:  # noqa: BLE001 - any import failure means: skip
    print(f"yolo_nms_e2e.py: SKIP: {e}")
    sys.exit(77)

NUM_CLASSES = 3
IMG = 64
STRIDES = (8, 16, 32)
REG_MAX = 8
BACKEND = "cpu"  # --backend


def conv_bn(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.SiLU())


class Backbone(nn.Module):
    """Three feature maps at strides 8, 16, 32."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 8, 3, 2), conv_bn(8, 16, 3, 2), conv_bn(16, 16, 3, 2))
        self.p4 = conv_bn(16, 24, 3, 2)
        self.p5 = conv_bn(24, 32, 3, 2)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.p4(p3)
        return [p3, p4, self.p5(p4)]


def anchor_points():
    pts, strides = [], []
    for s in STRIDES:
        n = IMG // s
        ys, xs = torch.meshgrid(torch.arange(n, dtype=torch.float32) + 0.5,
                                torch.arange(n, dtype=torch.float32) + 0.5, indexing="ij")
        pts.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], 1))
        strides.append(torch.full((n * n, 1), float(s)))
    return torch.cat(pts).t().unsqueeze(0), torch.cat(strides).t().unsqueeze(0)  # [1,2,A] [1,1,A]


class YoloV8(nn.Module):
    def __init__(self, two_outputs=False):
        super().__init__()
        self.two_outputs = two_outputs
        self.backbone = Backbone()
        chans = (16, 24, 32)
        self.box = nn.ModuleList(
            nn.Sequential(conv_bn(c, 16), nn.Conv2d(16, 4 * REG_MAX, 1)) for c in chans)
        self.cls = nn.ModuleList(
            nn.Sequential(conv_bn(c, 16), nn.Conv2d(16, NUM_CLASSES, 1)) for c in chans)
        self.dfl = nn.Conv2d(REG_MAX, 1, 1, bias=False)
        self.dfl.weight.data[:] = torch.arange(REG_MAX, dtype=torch.float32).view(1, REG_MAX, 1, 1)
        self.dfl.weight.requires_grad_(False)
        pts, strides = anchor_points()
        self.register_buffer("points", pts)
        self.register_buffer("strides", strides)

    def forward(self, x):
        feats = self.backbone(x)
        n = x.shape[0]
        box = torch.cat([b(f).flatten(2) for b, f in zip(self.box, feats)], 2)  # [N, 4R, A]
        cls = torch.cat([c(f).flatten(2) for c, f in zip(self.cls, feats)], 2)  # [N, C, A]
        a = box.shape[2]
        # DFL: [N, 4, R, A] -> softmax over R -> expectation -> [N, 4, A] distances (l, t, r, b).
        d = self.dfl(box.view(n, 4, REG_MAX, a).transpose(2, 1).softmax(1)).view(n, 4, a)
        lt, rb = d[:, :2], d[:, 2:]
        x1y1 = (self.points - lt) * self.strides
        x2y2 = (self.points + rb) * self.strides
        scores = cls.sigmoid()
        if self.two_outputs:
            return torch.cat([x1y1, x2y2], 1).transpose(1, 2), scores.transpose(1, 2)
        cxcy = (x1y1 + x2y2) / 2
        wh = x2y2 - x1y1
        return torch.cat([cxcy, wh, scores], 1)  # [N, 4 + C, A]


class YoloV5(nn.Module):
    ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))

    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.no = 5 + NUM_CLASSES
        self.m = nn.ModuleList(nn.Conv2d(c, 3 * self.no, 1) for c in (16, 24, 32))
        grids, anchors = [], []
        for i, s in enumerate(STRIDES):
            n = IMG // s
            ys, xs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
            grids.append(torch.stack((xs, ys), 2).view(1, 1, n, n, 2).float())
            anchors.append(torch.tensor(self.ANCHORS[i], dtype=torch.float32).view(1, 3, 1, 1, 2))
        for i in range(3):
            self.register_buffer(f"grid{i}", grids[i])
            self.register_buffer(f"anchor{i}", anchors[i])

    def forward(self, x):
        out = []
        for i, (f, s) in enumerate(zip(self.backbone(x), STRIDES)):
            n, _, h, w = f.shape
            y = self.m[i](f).view(n, 3, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            xy = (y[..., :2] * 2 - 0.5 + getattr(self, f"grid{i}")) * s
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor{i}")
            out.append(torch.cat((xy, wh, y[..., 4:]), 4).view(n, -1, self.no))
        return torch.cat(out, 1)  # [N, A, 5 + C]


def randomize(model, seed):
    torch.manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.Conv2d) and m.weight.requires_grad:
            nn.init.normal_(m.weight, 0.0, 0.3)
            if m.bias is not None:
                nn.init.normal_(m.bias, 0.0, 0.5)
        if isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.normal_(m.bias, 0.0, 0.2)
    model.train()
    with torch.no_grad():  # BatchNorm running statistics from a few random batches
        for _ in range(4):
            model(torch.rand(4, 3, IMG, IMG))
    model.eval()
    return model


def to_corners(boxes, coding):
    if coding == "corner":
        return boxes
    c, wh = boxes[..., :2], boxes[..., 2:]
    return torch.cat([c - wh / 2, c + wh / 2], -1)


def iou_matrix(a, b):
    return torchvision.ops.box_iou(a, b)


def reference(boxes, scores, conf, iou, top_k, agnostic, coding):
    """boxes [N, A, 4] (model coding), scores [N, A, C] -> per image (boxes, scores, classes)."""
    res, fragile = [], []
    for img in range(boxes.shape[0]):
        s = scores[img]
        a_idx, c_idx = torch.nonzero(s >= conf, as_tuple=True)
        cand_s = s[a_idx, c_idx]
        near = (cand_s - conf).abs().min().item() if len(cand_s) else 1.0
        below = s[s < conf]
        if len(below):
            near = min(near, (below - conf).abs().min().item())
        if near < 1e-5:
            fragile.append(f"image {img}: a score within {near:.1e} of conf_threshold")
        corners = to_corners(boxes[img], coding)[a_idx]
        groups = torch.zeros_like(c_idx) if agnostic else c_idx
        keep = torchvision.ops.batched_nms(corners, cand_s, groups, iou)
        # Fragility: a suppression decision (IoU of a candidate with a better kept box of its
        # group) within 1e-5 of the threshold.
        if len(cand_s):
            ious = iou_matrix(corners, corners[keep])
            same = groups[:, None] == groups[keep][None, :]
            better = cand_s[:, None] < cand_s[keep][None, :]
            gap = (ious - iou).abs()[same & better]
            if len(gap) and gap.min().item() < 1e-5:
                fragile.append(f"image {img}: an IoU within {gap.min().item():.1e} of iou_threshold")
        keep = keep[:top_k]
        ks = cand_s[keep]
        if len(ks) > 1 and (ks[:-1] - ks[1:]).min().item() < 1e-6:
            fragile.append(f"image {img}: kept scores tie within 1e-6")
        res.append((corners[keep].numpy(), ks.numpy(), c_idx[keep].numpy()))
    return res, fragile


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(f"FAILED ({p.returncode}): {' '.join(cmd)}\n{p.stdout}")
        sys.exit(2)
    return p.stdout


def check_case(name, trtutils, work, model, opset, dynamic, batch, coding, conf, iou, top_k,
               agnostic, seed):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    onnx_path, engine = os.path.join(d, f"{name}.onnx"), os.path.join(d, f"{name}.engine")
    x = torch.rand(batch, 3, IMG, IMG, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        raw = model(x)
        out_names = ["boxes", "scores"] if isinstance(raw, tuple) else ["output0"]
        torch.onnx.export(model, x, onnx_path, opset_version=opset, input_names=["images"],
                          output_names=out_names,
                          dynamic_axes={"images": {0: "batch"}, **{o: {0: "batch"} for o in out_names}}
                          if dynamic else None)
    if isinstance(raw, tuple):
        boxes, scores = raw
    elif raw.shape[1] == 4 + NUM_CLASSES:  # YOLOv8 [N, 4 + C, A]
        t = raw.transpose(1, 2)
        boxes, scores = t[..., :4], t[..., 4:]
    else:  # YOLOv5 [N, A, 5 + C]
        boxes, scores = raw[..., :4], raw[..., 5:] * raw[..., 4:5]
    want, fragile = reference(boxes, scores, conf, iou, top_k, agnostic, coding)
    if fragile:
        print(f"{name}: FRAGILE reference (choose another seed): {'; '.join(fragile)}")
        return False
    np.save(os.path.join(d, "images.npy"), x.numpy())
    cmd = [trtutils, "build_yolo", "--onnx", onnx_path, "--output", engine, "--backend", BACKEND,
           "--num_classes", str(NUM_CLASSES), "--conf_threshold", str(conf), "--iou_threshold",
           str(iou), "--top_k", str(top_k), "--box_coding", coding]
    if agnostic:
        cmd.append("--class_agnostic")
    if BACKEND == "cuda":  # float32 layers in exact float32 (the GPU default is TF32: ~1e-3)
        cmd.append("--no_tf32")
    log = run(cmd)
    run([trtutils, "run", "--engine", engine, "--input", f"images={d}/images.npy",
         "--output_dir", os.path.join(d, "out")])
    got = {k: np.load(os.path.join(d, "out", f"{k}.npy"))
           for k in ("num_dets", "det_boxes", "det_scores", "det_classes")}
    ok = True
    problems = []
    if got["num_dets"].shape != (batch, 1) or got["det_boxes"].shape != (batch, top_k, 4):
        problems.append(f"shapes {got['num_dets'].shape} {got['det_boxes'].shape}")
        ok = False
    for img, (wb, ws, wc) in enumerate(want):
        n = int(got["num_dets"][img, 0])
        if n != len(ws):
            problems.append(f"image {img}: num_dets {n}, reference {len(ws)}")
            ok = False
            continue
        gb, gs, gc = got["det_boxes"][img, :n], got["det_scores"][img, :n], got["det_classes"][img, :n]
        box_err = np.abs(gb - wb).max() / max(np.abs(wb).max(), 1e-12) if n else 0.0
        score_err = np.abs(gs - ws).max() / max(np.abs(ws).max(), 1e-12) if n else 0.0
        if not np.array_equal(gc, wc.astype(np.int32)):
            problems.append(f"image {img}: classes differ: {gc.tolist()} vs {wc.tolist()}")
            ok = False
        if box_err > 1e-4 or score_err > 1e-4:
            problems.append(f"image {img}: box rel err {box_err:.2e}, score rel err {score_err:.2e}")
            ok = False
        pad = (got["det_boxes"][img, n:], got["det_scores"][img, n:], got["det_classes"][img, n:])
        if any(np.any(p != 0) for p in pad):
            problems.append(f"image {img}: slots past num_dets are not zero")
            ok = False
        print(f"{name}: image {img}: {n} detections, box rel err {box_err:.2e}, "
              f"score rel err {score_err:.2e}")
    layout_line = next((ln for ln in log.splitlines() if "head" in ln or "outputs" in ln), "?")
    print(f"{name}: {layout_line}")
    for p in problems:
        print(f"{name}: MISMATCH: {p}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trtutils", default=os.environ.get("TRTUTILS_BIN", "build/bin/trtutils"))
    ap.add_argument("--work", default="", help="scratch folder (default: a fresh one, removed)")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
                    help="engine backend (cuda: NMS on the GPU; needs a GPU)")
    args = ap.parse_args()
    global BACKEND
    BACKEND = args.backend
    if not os.access(args.trtutils, os.X_OK):
        print(f"yolo_nms_e2e.py: ERROR: trtutils CLI not found at {args.trtutils}")
        return 2
    torch.set_num_threads(1)
    work = args.work or tempfile.mkdtemp(prefix="trtutils_yolo_e2e.")
    os.makedirs(work, exist_ok=True)
    v8 = randomize(YoloV8(), 1)
    v5 = randomize(YoloV5(), 2)
    pair = YoloV8(two_outputs=True)
    pair.load_state_dict(v8.state_dict())
    pair.eval()
    cases = [
        ("yolov8", v8, 13, True, 2, "center_size", 0.25, 0.45, 100, False, 11),
        ("yolov8_agnostic_top5", v8, 17, False, 1, "center_size", 0.1, 0.3, 5, True, 12),
        ("yolov8_conf0.01", v8, 13, False, 1, "center_size", 0.01, 0.6, 200, False, 15),
        ("yolov5", v5, 11, False, 2, "center_size", 0.3, 0.5, 50, False, 13),
        ("boxes_scores", pair, 13, True, 2, "corner", 0.5, 0.5, 100, False, 14),
    ]
    failed = [c[0] for c in cases if not check_case(c[0], args.trtutils, work, *c[1:])]
    if failed:
        print(f"FAILED: {' '.join(failed)} (work folder kept: {work})")
        return 1
    print(f"OK: all {len(cases)} YOLO cases match torchvision.ops.batched_nms")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
