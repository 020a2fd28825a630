set -uo pipefail
R=/tmp/res; mkdir -p $R
tar -C dist -xJf dist/trtutils-dist.tar.xz
OUT=$R PRECISIONS="int8" bash bench/cuda/bench_resnet50.sh > $R/rn50.txt 2>&1
OUT=$R BATCH=256 SPECS="efficientnet_b0:int8h vit_b_16:fp8" PROFILE=1 bash bench/cuda/bench_models.sh > $R/bench.txt 2>&1
python3 - > $R/scales.txt 2>&1 <<'PY'
import onnx, numpy as np
from onnx import numpy_helper
for f in ["/tmp/trtutils-models/efficientnet_b0_int8h.onnx"]:
    m = onnx.load(f)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[1] in inits:
            a = np.abs(inits[n.input[1]].astype(np.float32))
            if not np.isfinite(a).all() or (a == 0).any() or (a < 6.1e-5).any():
                print(n.name, inits[n.input[1]].dtype, a.min(), int((a == 0).sum()), int((a < 6.1e-5).sum()), a.size)
PY
{ tail -20 $R/rn50.txt; cat $R/models_summary.txt; head -40 $R/scales.txt; sed -n '/per op and kernel/,+12p' $R/profile_efficientnet_b0_int8h.txt; } > $OUT/summary.txt
tar -C $R -czf $OUT/r.tgz .
