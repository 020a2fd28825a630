"""inspect_engine: an engine's target, IO bindings, memory and layer table, as a dict with the
keys of ``trtutils inspect --json``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from . import _trtutils
from ._engine import TRTEngine


def _io(tensors: list[_trtutils.EngineTensorInfo]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "dtype": _trtutils.dtype_name(t.dtype),
            "shape": list(t.shape),
            "format": t.format,
            "min": list(t.min_shape),
            "opt": list(t.opt_shape),
            "max": list(t.max_shape),
        }
        for t in tensors
    ]


def _layer(layer: _trtutils.EngineLayerInfo) -> dict[str, Any]:
    keys = ("index", "name", "op", "precision", "device", "kernel", "tactic", "inputs", "outputs",
            "input_shapes", "output_shapes")
    return {k: getattr(layer, k) for k in keys}


def inspect_engine(engine: TRTEngine | Path | str, *, verbose: bool | None = None) -> dict[str, Any]:
    """The engine's description (loaded on the CPU backend when given as a path)."""
    if isinstance(engine, TRTEngine):
        e, path = engine.engine, str(engine.engine.path)
    else:
        e, path = _trtutils.Engine.load(str(engine), "cpu"), str(engine)
    layers = list(e.layers)
    info = {
        "engine": path,
        "backend": e.backend,
        "target_sm": e.target_sm,
        "strongly_typed": e.strongly_typed,
        "weight_bytes": e.weight_bytes,
        "activation_arena_bytes": e.activation_arena_bytes,
        "inputs": _io(list(e.inputs)),
        "outputs": _io(list(e.outputs)),
        "layers_per_precision": dict(sorted(Counter(l.precision for l in layers).items())),
        "layers": [_layer(l) for l in layers],
        "build": json.loads(e.info_json),
    }
    if verbose:
        print(json.dumps({k: v for k, v in info.items() if k != "layers"}, indent=2))
    return info
