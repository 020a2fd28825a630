#!/usr/bin/python3
"""How close FP8 (E4M3) quantization can come to the float ViT-B/16: a PyTorch simulation.

Simulates what `trtutils quantize --quantize_mode fp8 --calibration_method max` places on the
e2e's torchvision ViT-B/16 (random weights from tests/e2e/export_models.py): per-tensor E4M3
Q/DQ (scale = calibrated |x|max / 448) on every GEMM input of each encoder block (the QKV
product's input, the scaled Q, K and V, the Softmax probabilities, the output projection's, the
MLP-up and MLP-down inputs: classes qkv q k v p out fc1 fc2), weights per output channel (scale
|w|max / 448); the patch-embedding Conv (3 input channels) and the single-row head stay in float,
as in the Q/DQ model. It reports the output SQNR against the float model on evaluation crops, as
tests/e2e/quantize_e2e.sh does with ONNX Runtime. Independent of our code: it answers which
error no weight rounding or calibration method can remove.

Variants (arguments; default: float_w rtn gptq):
  float_w    weights in float: the activations' own floor.
  rtn        weights rounded to nearest.
  gptq       GPTQ weight rounding with E[x x^T] of the float model (quantize's default).
  fit        noise-aware least squares before GPTQ: W' = W E[x xq^T] E[xq xq^T]^-1 with xq the
             layer's quantized input, then GPTQ with E[xq xq^T].
  asym       the same fit layer by layer with xq taken from the partly quantized model
             (asymmetric calibration, as GPTAQ); asym_b also re-fits the bias; asym_nofit_b is
             GPTQ with the quantized model's E[xq xq^T] plus that bias.
  V@D        damps the fit's inverse by D x mean(diag).
  V:CLS,...  leaves those activation classes in float.

Usage (the GPU machine runs it in seconds; the dev machine's Debian torch has a generic BLAS):
  /usr/bin/python3 tests/e2e/quantize_calib_photos.py calib.npy --count 72 --size 224 --seed 0
  /usr/bin/python3 tests/e2e/quantize_calib_photos.py eval.npy --count 16 --size 224 --seed 1
  python3 bench/fp8_floor.py calib.npy eval.npy float_w float_w:qkv,q,k,v,p gptq
The first 4 evaluation crops are the e2e's (same seed); the figure moves by ~1 dB with the crops.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from export_models import make_model  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
CLASSES = ("qkv", "q", "k", "v", "p", "out", "fc1", "fc2")


def e4m3(x):
    """Rounds x (already divided by its scale) to float8e4m3fn, saturating at 448."""
    a = x.abs().clamp(max=448.0)
    step = torch.pow(2.0, torch.floor(torch.log2(a.clamp(min=2.0 ** -9))).clamp(min=-6) - 3)
    return torch.sign(x) * (torch.round(a / step) * step).clamp(max=448.0)


def fake_quant(x, amax):
    s = amax / 448.0
    return e4m3(x / s) * s


class Vit:
    """ViT-B/16's forward pass with a hook at each GEMM input and activation Q/DQ."""

    def __init__(self, model):
        self.m = model
        self.blocks = list(model.encoder.layers)
        self.w, self.b = {}, {}
        for i, blk in enumerate(self.blocks):
            att = blk.self_attention
            for cls, (w, b) in {"qkv": (att.in_proj_weight, att.in_proj_bias),
                                "out": (att.out_proj.weight, att.out_proj.bias),
                                "fc1": (blk.mlp[0].weight, blk.mlp[0].bias),
                                "fc2": (blk.mlp[3].weight, blk.mlp[3].bias)}.items():
                self.w[f"{i}.{cls}"] = w.detach().clone()
                self.b[f"{i}.{cls}"] = b.detach().clone()
        self.names = list(self.w)  # in execution order
        self.wq, self.bq = dict(self.w), dict(self.b)
        self.amax = {}
        self.mode = "float"  # float | calibrate | quant
        self.skip = set()
        self.hooks = {}  # GEMM name -> fn(float input, quantized input)

    def act(self, name, x):
        if self.mode == "calibrate":
            self.amax[name] = max(self.amax.get(name, 0.0), float(x.abs().max()))
        elif self.mode == "quant" and name.split(".")[1] not in self.skip:
            return fake_quant(x, self.amax[name])
        return x

    def gemm(self, name, x):
        xin = self.act(name, x)
        if name in self.hooks:
            self.hooks[name](x, xin)
        q = self.mode == "quant"
        return xin @ (self.wq if q else self.w)[name].t() + (self.bq if q else self.b)[name]

    @torch.no_grad()
    def __call__(self, x, mode="float"):
        self.mode = mode
        m, n = self.m, x.shape[0]
        y = m._process_input(x)
        y = torch.cat([m.class_token.expand(n, -1, -1), y], 1) + m.encoder.pos_embedding
        for i, blk in enumerate(self.blocks):
            qkv = self.gemm(f"{i}.qkv", blk.ln_1(y))
            q, k, v = (t.reshape(n, -1, 12, 64).transpose(1, 2) for t in qkv.split(768, -1))
            q = self.act(f"{i}.q", q * 64 ** -0.5)
            k, v = self.act(f"{i}.k", k), self.act(f"{i}.v", v)
            p = self.act(f"{i}.p", torch.softmax(q @ k.transpose(-1, -2), -1))
            y = y + self.gemm(f"{i}.out", (p @ v).transpose(1, 2).reshape(n, -1, 768))
            h = torch.nn.functional.gelu(self.gemm(f"{i}.fc1", blk.ln_2(y)))
            y = y + self.gemm(f"{i}.fc2", h)
        self.mode = "float"
        return m.heads(m.encoder.ln(y)[:, 0])


def batches(x, bs=8):
    return [x[i:i + bs] for i in range(0, x.shape[0], bs)]


def sqnr(ref, out):
    return 10 * math.log10(float((ref ** 2).sum()) / float(((ref - out) ** 2).sum()))


def rtn(w):
    s = w.abs().amax(1, keepdim=True) / 448.0
    return e4m3(w / s) * s


def dinv(h, damp):
    eye = torch.eye(h.shape[0], dtype=h.dtype, device=h.device)
    return torch.linalg.inv(h + damp * torch.diag(h).mean() * eye)


def gptq(w, h, damp=0.01):
    """GPTQ with act order, column by column (as src/quantize/gptq.cpp, unblocked)."""
    w, h = w.clone().double(), h.clone().double()
    s = (w.abs().amax(1) / 448.0)
    perm = torch.argsort(torch.diag(h), descending=True)
    w, h = w[:, perm], h[perm][:, perm]
    h += damp * torch.diag(h).mean() * torch.eye(h.shape[0], dtype=h.dtype, device=h.device)
    u = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(h)), upper=True)
    q = torch.zeros_like(w)
    for i in range(w.shape[1]):
        q[:, i] = e4m3(w[:, i] / s) * s
        e = (w[:, i] - q[:, i]) / u[i, i]
        w[:, i + 1:] -= e[:, None] * u[i, i + 1:][None, :]
    out = torch.empty_like(q)
    out[:, perm] = q
    return out.float()


def moments(vit, calib, name, quantized_model):
    """E[x x^T], E[x xq^T], E[xq xq^T], E[x], E[xq] of GEMM `name`'s input; xq is the float
    input quantized alone, or (quantized_model) the quantized model's quantized input."""
    acc, cap = [0, 0, 0, 0, 0, 0], {}
    for b in batches(calib):
        vit.hooks[name] = lambda x, xin: cap.update(x=x, xq=fake_quant(x, vit.amax[name]))
        vit(b)
        if quantized_model:
            vit.hooks[name] = lambda x, xin: cap.update(xq=xin)
            vit(b, "quant")
        x = cap["x"].reshape(-1, cap["x"].shape[-1]).double()
        xq = cap["xq"].reshape(-1, x.shape[-1]).double()
        for j, v in enumerate((x.t() @ x, x.t() @ xq, xq.t() @ xq, x.sum(0), xq.sum(0))):
            acc[j] = acc[j] + v
        acc[5] += x.shape[0]
    vit.hooks.clear()
    return [a / acc[5] for a in acc[:5]]


def set_weights(vit, calib, variant, damp):
    vit.wq, vit.bq = dict(vit.w), dict(vit.b)
    asym = variant.startswith("asym")
    for name in vit.names:  # in order: asym sees the layers before it quantized
        w = vit.w[name]
        if variant == "float_w":
            continue
        if variant == "rtn":
            vit.wq[name] = rtn(w)
            continue
        h, c, hq, mx, mxq = moments(vit, calib, name, asym)
        if variant == "gptq":
            vit.wq[name] = gptq(w, h.float())
            continue
        wp = w if variant == "asym_nofit_b" else (w.double() @ c @ dinv(hq, damp)).float()
        vit.wq[name] = gptq(wp, hq.float())
        if variant.endswith("_b"):
            vit.bq[name] = (vit.b[name].double() + w.double() @ mx
                            - vit.wq[name].double() @ mxq).float()


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    torch.manual_seed(0)
    vit = Vit(make_model("vit_b_16").to(DEV))
    calib = torch.from_numpy(np.load(sys.argv[1])).to(DEV)
    evalx = torch.from_numpy(np.load(sys.argv[2])).to(DEV)
    ref = torch.cat([vit(b) for b in batches(evalx)])
    with torch.no_grad():
        drift = float((vit.m(evalx[:2]) - ref[:2]).abs().max())
    print(f"device {DEV}; this forward against torchvision's: max |diff| {drift:.2e}")
    for b in batches(calib):
        vit(b, "calibrate")
    print(f"{len(vit.amax)} activations calibrated (max) on {calib.shape[0]} crops")
    for arg in sys.argv[3:] or ["float_w", "rtn", "gptq"]:
        spec, _, skip = arg.partition(":")
        variant, _, damp = spec.partition("@")
        vit.skip = {c for c in skip.split(",") if c}
        assert vit.skip <= set(CLASSES), f"classes: {CLASSES}"
        set_weights(vit, calib, variant, float(damp or 0))
        out = torch.cat([vit(b, "quant") for b in batches(evalx)])
        print(f"{arg:28s} output SQNR {sqnr(ref, out):6.2f} dB on {evalx.shape[0]} crops, "
              f"{sqnr(ref[:4], out[:4]):6.2f} dB on the first 4", flush=True)


if __name__ == "__main__":
    main()
