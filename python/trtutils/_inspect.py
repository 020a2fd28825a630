"""inspect_engine: an engine's versions, target, IO bindings, memory and layer table, as a dict:
exactly what ``trtutils inspect --json`` prints (both come from the library's
engine_inspect_json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import _trtutils
from ._engine import TRTEngine


def inspect_engine(engine: TRTEngine | Path | str, *, verbose: bool | None = None) -> dict[str, Any]:
    """The engine's description (loaded on the CPU backend when given as a path)."""
    if isinstance(engine, TRTEngine):
        e = engine.engine
    else:
        e = _trtutils.Engine.load(str(engine), "cpu")
    info: dict[str, Any] = json.loads(e.inspect_json)
    if verbose:
        print(json.dumps({k: v for k, v in info.items() if k != "layers"}, indent=2))
    return info
