#!/usr/bin/python3
"""calibration_method auto's selection rules replayed offline (issue 35): for each model and mode
of a bench/quantize_auto_cpu.py results.json (its auto rows carry every candidate's per-sample
scores, batch_db), which candidate each rule picks and that candidate's SQNR on the judging
photos against the best single method and against max.

    /usr/bin/python3 bench/quantize_auto_rules.py DIR/results.json
"""
import json, math, statistics as st, sys
res = json.load(open(sys.argv[1]))
CANDS = ["max", "entropy", "percentile", "mse", "per_tensor"]
def judge(rows, name):
    # per_tensor has no single-method run of its own: mse's judge stands in for it (an
    # approximation; per_tensor's table differs from mse's on a few tensors).
    m = "mse" if name == "per_tensor" else name
    return rows[m]["sqnr"] if m in rows else None
def rule_worst(b, margin):
    w = {c: min(v) for c, v in b.items()}
    best = max(w, key=lambda c: (w[c], c == "max"))
    return best if best == "max" or w[best] >= w["max"] + margin else "max"
def rule_paired(b, z=2.0, score=min):
    ok = []
    for c, v in b.items():
        if c == "max": continue
        d = [x - y for x, y in zip(v, b["max"])]
        m = st.mean(d); se = st.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else 0
        if m - z * se > 0: ok.append(c)
    if not ok: return "max"
    return max(ok, key=lambda c: score(b[c]))
def rule_paired_worst(b, z=2.0):
    # best worst-batch among candidates whose paired advantage over max is significant; max if none
    return rule_paired(b, z, min)
def rule_paired_mean(b, z=2.0):
    return rule_paired(b, z, st.mean)
rules = {"worst+0.75": lambda b: rule_worst(b, 0.75), "worst+0": lambda b: rule_worst(b, 0),
         "worst+0.3": lambda b: rule_worst(b, 0.3),
         "paired z2 worst": rule_paired_worst, "paired z1 worst": lambda b: rule_paired(b, 1.0, min),
         "paired z2 mean": rule_paired_mean, "paired z3 worst": lambda b: rule_paired(b, 3.0, min)}
tot = {r: [] for r in rules}
for key, rows in res.items():
    if "auto" not in rows or "batch_db" not in rows["auto"]: continue
    b = rows["auto"]["batch_db"]
    singles = {m: rows[m]["sqnr"] for m in ["max", "entropy", "percentile", "mse"] if m in rows}
    best = max(singles.values())
    line = f"{key:28s} best {best:6.2f} max {singles['max']:6.2f} auto-now {rows['auto']['chosen']:10s} {rows['auto']['sqnr']:6.2f} |"
    for r, f in rules.items():
        c = f(b); j = judge(rows, c)
        gap = j - best if j is not None else float('nan'); tot[r].append(gap)
        vs_max = j - singles['max'] if j is not None else float('nan')
        line += f" {r}:{c[:4]} {gap:+.2f}/{vs_max:+.2f}"
    print(line)
for r, g in tot.items():
    print(f"{r:18s} worst gap {min(g):+.2f}  mean {st.mean(g):+.2f}  misses(<-0.3) {sum(x < -0.3 for x in g)}/{len(g)}")
