"""The builder: ImageBatcher -> quantize.quantize_onnx -> build_engine / build_dla_engine.

    from trtutils.builder import quantize, build_engine, ImageBatcher
"""

from __future__ import annotations

from . import quantize
from ._batcher import ImageBatcher
from ._build import build_engine, set_target_sm, target_sm
from ._dla import build_dla_engine, can_run_on_dla, dla_report

__all__ = [
    "ImageBatcher",
    "build_dla_engine",
    "build_engine",
    "can_run_on_dla",
    "dla_report",
    "quantize",
    "set_target_sm",
    "target_sm",
]
