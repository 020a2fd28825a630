#!/usr/bin/python3
"""Exports torchvision architectures with random weights to ONNX (opset 17) for the e2e tests.

Usage: /usr/bin/python3 export_models.py [--cache DIR] [--list] [NAME ...]

DIR defaults to $TRTUTILS_MODEL_CACHE or ~/.cache/trtutils/models. NAME defaults to the e2e set
(see E2E_MODELS). Models already in the cache are skipped; files are written to a temporary name
in the cache folder and renamed into place, so an interrupted export never leaves a partial model.

Weights are random (weights=None, torch.manual_seed(0)) but made less trivial than torchvision's
init: BatchNorm running statistics and affine parameters are perturbed (default init makes BN an
identity in eval mode) and all-zero weight matrices (ViT's head) get a small normal init, so the
outputs depend on every layer. Requires torch/torchvision (Debian's torch 1.13 works).
"""
import argparse
import os
import sys
import tempfile

# name -> (torchvision constructor, batch, dynamic batch axis?)
MODELS = {
    "resnet50": ("resnet50", 1, False),
    "mobilenet_v2": ("mobilenet_v2", 1, False),
    "mobilenet_v3_large": ("mobilenet_v3_large", 1, False),
    "efficientnet_b0": ("efficientnet_b0", 1, False),
    "vit_b_16": ("vit_b_16", 1, False),
    "mobilenet_v2_dynbatch": ("mobilenet_v2", 1, True),
    "resnet50_b8": ("resnet50", 8, False),
    # Batch 8 of the CPU speed set (bench/cpu_ab.sh, issue 36).
    "mobilenet_v2_b8": ("mobilenet_v2", 8, False),
    "efficientnet_b0_b8": ("efficientnet_b0", 8, False),
    "vit_b_16_b8": ("vit_b_16", 8, False),
    # A wider set for robustness sweeps (not in the e2e defaults): concatenations, grouped and
    # channel-shuffled convolutions, squeeze-excitation, channels-last LayerNorm, windowed
    # attention, dilated segmentation heads with Resize.
    "resnet18": ("resnet18", 1, False),
    "densenet121": ("densenet121", 1, False),
    "googlenet": ("googlenet", 1, False),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", 1, False),
    "squeezenet1_1": ("squeezenet1_1", 1, False),
    "regnet_y_400mf": ("regnet_y_400mf", 1, False),
    "mnasnet1_0": ("mnasnet1_0", 1, False),
    "convnext_tiny": ("convnext_tiny", 1, False),
    "swin_t": ("swin_t", 1, False),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", 1, False),
    # Session 7: an 11x11 stride-4 stem (AlexNet), grouped 32x4d bottlenecks (ResNeXt), fused
    # MBConv (EfficientNetV2), asymmetric 1x7 / 7x1 factorised convolutions (Inception v3), a
    # lite R-ASPP segmentation head with global pooling and sigmoid gating.
    "alexnet": ("alexnet", 1, False),
    "resnext50_32x4d": ("resnext50_32x4d", 1, False),
    "efficientnet_v2_s": ("efficientnet_v2_s", 1, False),
    "inception_v3": ("inception_v3", 1, False),
    "mobilenet_v3_small": ("mobilenet_v3_small", 1, False),
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp_mobilenet_v3_large", 1, False),
}
E2E_MODELS = ["resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16",
              "mobilenet_v2_dynbatch"]
OPSET = 17


def default_cache():
    env = os.environ.get("TRTUTILS_MODEL_CACHE")
    if env:
        return env
    return os.path.join(os.path.expanduser("~"), ".cache", "trtutils", "models")


def make_model(ctor_name, **extra):
    """A torchvision model with random weights and BatchNorm statistics; `extra` goes to its
    constructor (e.g. a detector's score_thresh)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    ctor = torchvision.models
    for part in ctor_name.split("."):  # e.g. segmentation.deeplabv3_mobilenet_v3_large
        ctor = getattr(ctor, part)
    kwargs = {"weights_backbone": None} if "." in ctor_name else {}
    if ctor_name in ("googlenet", "inception_v3"):
        kwargs = {"aux_logits": False, "init_weights": True}
    model = ctor(weights=None, **kwargs, **extra)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                n = module.num_features
                module.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                module.running_var.copy_(0.5 + torch.rand(n, generator=gen))
                if module.affine:
                    module.weight.copy_(0.75 + 0.5 * torch.rand(n, generator=gen))
                    module.bias.copy_(0.1 * torch.randn(n, generator=gen))
        for name, p in model.named_parameters():
            if p.dim() >= 2 and not torch.any(p != 0):
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    return model.eval()


def export(name, cache):
    import torch

    ctor, batch, dynamic = MODELS[name]
    path = os.path.join(cache, name + ".onnx")
    if os.path.exists(path):
        print(f"[export] {name}: cached at {path}")
        return path
    model = make_model(ctor)
    x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".onnx.tmp", dir=cache)
    os.close(fd)
    try:
        kwargs = {}
        if dynamic:
            kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
        # Grad stays enabled: under no_grad torch 1.13 routes nn.MultiheadAttention (ViT) to a
        # fused fast path that has no ONNX symbolic.
        torch.onnx.export(model, x, tmp, opset_version=OPSET, input_names=["input"],
                          output_names=["output"], do_constant_folding=True, **kwargs)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"[export] {name}: wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=default_cache(), help="output folder (default: %(default)s)")
    ap.add_argument("--list", action="store_true", help="print the known model names and exit")
    ap.add_argument("names", nargs="*", help="models to export (default: the e2e set)")
    args = ap.parse_args()
    if args.list:
        for n, (ctor, batch, dyn) in MODELS.items():
            print(f"{n}\t{ctor}\tbatch={'dynamic' if dyn else batch}")
        return 0
    names = args.names or E2E_MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"export_models.py: unknown model(s) {unknown}; known: {list(MODELS)}", file=sys.stderr)
        return 2
    os.makedirs(args.cache, exist_ok=True)
    for n in names:
        export(n, args.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
