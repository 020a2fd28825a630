#!/usr/bin/env python3
"""Explains an engine's per-layer GPU times against the layer's work (issue 6).

  profile_analysis.py INSPECT.json PROFILE.json [--batch N] [--peak_tops T] [--peak_gbs G]

INSPECT.json: `trtutils inspect --engine E --json`; PROFILE.json: `trtutils benchmark --engine E
--profile --json F` (per-layer ms per iteration, CUDA events around each layer). Per layer it
counts the operations (2 x multiply-adds of Conv / Gemm / MatMul, else one per output element)
and the bytes read and written (activations at the layer's precision: int8 / fp8 1 byte, fp16
2, fp32 4; weights likewise), and compares the measured time with the time a roofline allows:
max(ops / peak_ops, bytes / peak_bandwidth). A layer is
  launch-bound  when it takes < 15 us and both roofline times are < 5 us,
  compute-bound when ops / peak_ops is the larger roofline time, else memory-bound.
Prints the table sorted by time (top 25), the totals per class and per op, and what fraction of
its roofline each class reaches. Peaks default to the H200 figures measured here (cuBLASLt
8192^3: 1,490 INT8 TOP/s, 775 FP16 TFLOP/s; HBM3e 4,800 GB/s).
"""
import argparse
import json
import re
import sys

BYTES = {"int8": 1, "fp8": 1, "uint8": 1, "fp16": 2, "bf16": 2, "fp32": 4, "tf32": 4, "int32": 4,
         "int64": 8}
PEAK_TOPS = {"int8": 1490.0, "fp8": 1470.0, "fp16": 775.0, "bf16": 775.0, "tf32": 390.0,
             "fp32": 60.0}


def dims(text, batch):
    out = []
    for tok in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\d+", text or ""):
        out.append(int(tok) if tok.isdigit() else batch)
    return out


def prod(v):
    r = 1
    for x in v:
        r *= x
    return r


def layer_work(layer, batch):
    op = layer["op"].split("::")[-1]
    prec = layer.get("precision", "fp32")
    ins = [dims(s, batch) for s in layer.get("input_shapes", [])]
    outs = [dims(s, batch) for s in layer.get("output_shapes", [])]
    esize = BYTES.get(prec, 4)
    out_elems = sum(prod(o) for o in outs)
    ops = out_elems
    if op in ("Conv", "FusedConv", "QConv") and len(ins) >= 2 and outs:
        # The weight: the first input after X with X's rank (QConv's inputs are QLinearConv's:
        # x, x_scale, x_zero_point, w, ...).
        w = next((i for i in ins[1:] if len(i) == len(ins[0])), ins[1])
        ops = 2 * prod(outs[0]) * prod(w[1:])
    elif op in ("Gemm", "QGemm", "MatMul", "QMatMul") and len(ins) >= 2 and outs:
        k = ins[0][-1] if ins[0] else 1
        ops = 2 * prod(outs[0]) * k
    nbytes = sum(prod(i) for i in ins) * esize + out_elems * esize
    return op, prec, ops, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inspect")
    ap.add_argument("profile")
    ap.add_argument("--batch", type=int, default=1, help="value of symbolic dims")
    ap.add_argument("--peak_gbs", type=float, default=4800.0)
    ap.add_argument("--peak_tops", type=float, default=0.0, help="override per-precision peaks")
    a = ap.parse_args()
    info = json.load(open(a.inspect))
    prof = json.load(open(a.profile))
    times = {l["name"]: l["ms"] for l in prof.get("layers", [])}
    # What ran each layer (benchmark --profile of a GPU engine), else inspect's build-time label.
    ran = {l["name"]: l["kernel"] for l in prof.get("layers", []) if l.get("kernel")}
    rows = []
    for layer in info["layers"]:
        if layer["name"] not in times:
            continue
        op, prec, ops, nbytes = layer_work(layer, a.batch)
        ms = times[layer["name"]]
        peak = a.peak_tops or PEAK_TOPS.get(prec, 60.0)
        t_c = ops / (peak * 1e12) * 1e3
        t_m = nbytes / (a.peak_gbs * 1e9) * 1e3
        if ms < 0.015 and t_c < 0.005 and t_m < 0.005:
            cls = "launch"
        else:
            cls = "compute" if t_c >= t_m else "memory"
        rows.append(dict(name=layer["name"], op=op, prec=prec, kernel=ran.get(layer["name"], layer.get("kernel", "")),
                         ms=ms, ops=ops, bytes=nbytes, roof=max(t_c, t_m), cls=cls))
    total = sum(r["ms"] for r in rows)
    print(f"{len(rows)} layers, {total:.3f} ms per iteration (sum of layer times)")
    print(f"{'layer':42} {'op':10} {'prec':5} {'ms':>8} {'%':>5} {'GOP':>8} {'MB':>8} "
          f"{'TOP/s':>7} {'GB/s':>7} {'roof%':>6} class  kernel")
    for r in sorted(rows, key=lambda r: -r["ms"])[:25]:
        s = r["ms"] / 1e3
        print(f"{r['name'][-42:]:42} {r['op'][:10]:10} {r['prec']:5} {r['ms']:8.3f} "
              f"{100 * r['ms'] / total:5.1f} {r['ops'] / 1e9:8.2f} {r['bytes'] / 1e6:8.2f} "
              f"{r['ops'] / s / 1e12 if s else 0:7.1f} {r['bytes'] / s / 1e9 if s else 0:7.0f} "
              f"{100 * r['roof'] / r['ms'] if r['ms'] else 0:6.1f} {r['cls']:7} {r['kernel']}")
    print("per class: ms, share, roofline time, fraction of roofline reached")
    for cls in ("compute", "memory", "launch"):
        sel = [r for r in rows if r["cls"] == cls]
        ms = sum(r["ms"] for r in sel)
        roof = sum(r["roof"] for r in sel)
        print(f"  {cls:8} {len(sel):4} layers {ms:9.3f} ms {100 * ms / total if total else 0:5.1f}%"
              f"  roofline {roof:8.3f} ms  ({100 * roof / ms if ms else 0:.1f}%)")
    by_op = {}
    for r in rows:
        k = (r["op"], r["kernel"])
        by_op.setdefault(k, [0, 0.0, 0.0])
        by_op[k][0] += 1
        by_op[k][1] += r["ms"]
        by_op[k][2] += r["roof"]
    print("per op and kernel: count, ms, share, roofline fraction")
    for (op, kern), (n, ms, roof) in sorted(by_op.items(), key=lambda kv: -kv[1][1]):
        print(f"  {op:12} {kern[:40]:40} {n:4} {ms:9.3f} ms {100 * ms / total:5.1f}%  "
              f"{100 * roof / ms if ms else 0:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
