#!/usr/bin/env python3
"""Exports the CUDA device check's torchvision models (random weights) to ONNX.

Usage: python3 bench/cuda/export_models.py OUT_DIR [NAME ...]   (default: resnet50 mobilenet_v2
efficientnet_b0 vit_b_16). Reuses tests/e2e/export_models.py's weight initialisation; prefers the
TorchScript exporter (dynamo=False) where this torch still has it, at opset 17.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
import export_models as e2e  # noqa: E402

DEFAULT = ["resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16"]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    names = sys.argv[2:] or DEFAULT
    os.makedirs(out, exist_ok=True)
    import torch

    for name in names:
        ctor, batch, _ = e2e.MODELS[name]
        path = os.path.join(out, name + ".onnx")
        model = e2e.make_model(ctor)
        x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(2))
        kwargs = dict(opset_version=17, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
        try:
            torch.onnx.export(model, x, path, dynamo=False, **kwargs)
        except TypeError:  # torch without the dynamo switch: the TorchScript exporter anyway
            torch.onnx.export(model, x, path, **kwargs)
        print(f"[export] {name}: {path} ({os.path.getsize(path) / 1e6:.1f} MB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
