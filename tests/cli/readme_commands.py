#!/usr/bin/env python3
"""Runs the README's commands as written (issue 33): every `build/bin/trtutils ...` command of
the README's bash blocks (continuation lines joined, trailing comments dropped), in README order,
in a scratch folder holding the files they name: model.onnx (a small classifier with input
`images` [N, 3, 224, 224] and output `logits`, layers named as the README's examples name them),
yolov8n.onnx (a YOLOv8-shaped head [1, 84, 49]), photos/, cat.jpg, cat.png, street.jpg, coco.txt,
imagenet.txt and resnet50.engine. A command fails the test when it exits non-zero.

Skipped (each printed): commands that run a GPU engine on a machine without a usable GPU, and
the install / package commands (tests/packaging covers those).

Usage: readme_commands.py README.md BUILD_DIR SOURCE_DIR SCRATCH
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def commands(readme):
    """The trtutils command lines of the README's ```bash blocks, joined and stripped."""
    out, block, pending = [], False, ""
    for line in open(readme, encoding="utf-8"):
        s = line.rstrip("\n")
        if s.strip().startswith("```"):
            block = s.strip() == "```bash" and not block
            pending = ""
            continue
        if not block:
            continue
        if pending:
            s = pending + " " + s.strip()
            pending = ""
        code = re.sub(r"\s+#.*$", "", s).rstrip() if not s.lstrip().startswith("#") else ""
        if code.endswith("\\"):
            pending = code[:-1].rstrip()
            continue
        if "build/bin/trtutils" in code:
            out.append(code.strip())
    return out


def init(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def classifier(path):
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["images", "w1", "b1"], ["c1"], name="/layer4/conv2/Conv",
                         strides=[4, 4], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="/layer4/relu/Relu"),
        helper.make_node("GlobalAveragePool", ["r1"], ["p"], name="/avgpool/GlobalAveragePool"),
        helper.make_node("Flatten", ["p"], ["f"], name="/flatten/Flatten"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], name="/head/fc/Gemm", transB=1),
    ]
    g = helper.make_graph(
        nodes, "readme_classifier",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [init("w1", rng.normal(0, 0.2, (16, 3, 3, 3))), init("b1", rng.normal(0, 0.1, 16)),
         init("w2", rng.normal(0, 0.3, (10, 16))), init("b2", rng.normal(0, 0.1, 10))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def yolo(path):
    """[1, 3, 224, 224] -> stride-32 conv -> [1, 84, 49]: YOLOv8's output layout (4 box + 80 classes;
    224 so that the README's x.npy feeds it too)."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["images", "w", "b"], ["c"], strides=[32, 32]),
        helper.make_node("Sigmoid", ["c"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["m"]),
        helper.make_node("Reshape", ["m", "shape"], ["output0"]),
    ]
    scale = np.ones((1, 84, 1, 1), dtype=np.float32)
    scale[0, :4] = 224.0
    g = helper.make_graph(
        nodes, "readme_yolo",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 84, 49])],
        [init("w", rng.normal(0, 0.05, (84, 3, 32, 32))), init("b", rng.normal(0, 0.5, 84)),
         init("scale", scale),
         numpy_helper.from_array(np.array([1, 84, 49], dtype=np.int64), "shape")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def scratch(dirpath, source, cli):
    if os.path.exists(dirpath):
        shutil.rmtree(dirpath)
    os.makedirs(os.path.join(dirpath, "photos"))
    classifier(os.path.join(dirpath, "model.onnx"))
    yolo(os.path.join(dirpath, "yolov8n.onnx"))
    images = os.path.join(source, "tests", "data", "images")
    photos = sorted(f for f in os.listdir(images) if f.startswith("photo_"))
    for k in range(2):  # 8 photos: one full batch of 8
        for f in photos:
            shutil.copy(os.path.join(images, f), os.path.join(dirpath, "photos", f"{k}_{f}"))
    shutil.copy(os.path.join(images, "photo_hubble.jpg"), os.path.join(dirpath, "cat.jpg"))
    shutil.copy(os.path.join(images, "photo_chelsea.png"), os.path.join(dirpath, "cat.png"))
    shutil.copy(os.path.join(images, "photo_hubble.jpg"), os.path.join(dirpath, "street.jpg"))
    with open(os.path.join(dirpath, "coco.txt"), "w") as f:
        f.write("".join(f"class{i}\n" for i in range(80)))
    with open(os.path.join(dirpath, "imagenet.txt"), "w") as f:
        f.write("".join(f"label{i}\n" for i in range(10)))
    np.save(os.path.join(dirpath, "x.npy"),
            np.random.default_rng(2).random((1, 3, 224, 224), dtype=np.float32))
    subprocess.run([cli, "build", "--onnx", "model.onnx", "--output", "resnet50.engine"],
                   cwd=dirpath, check=True, capture_output=True)


def main():
    readme, build, source, work = sys.argv[1:5]
    cli = os.path.abspath(os.path.join(build, "bin", "trtutils"))
    source = os.path.abspath(source)
    scratch(work, source, cli)
    info = subprocess.run([cli, "info"], capture_output=True, text=True).stdout
    gpu = "backend cuda: usable" in info
    cmds = commands(readme)
    failed, ran, skipped = [], 0, 0
    for c in cmds:
        if not gpu and "model_gpu.engine" in c and re.search(r"trtutils (run|benchmark) ", c):
            print(f"skip (no GPU here): {c}")
            skipped += 1
            continue
        line = c.replace("build/bin/trtutils", cli)
        r = subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, text=True,
                           timeout=300)
        ran += 1
        status = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
        print(f"{status}: {c}")
        if r.returncode != 0:
            failed.append(c)
            print((r.stdout + r.stderr)[-1500:])
    print(f"README commands: {ran} ran, {len(failed)} failed, {skipped} skipped, of {len(cmds)}")
    return 1 if failed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
