"""FLAGS: what this machine and build offer, detected once at import (the original's names)."""

from __future__ import annotations

from dataclasses import dataclass

from . import _trtutils


@dataclass(frozen=True)
class Flags:
    """Platform flags.

    IS_BLACKWELL: the first CUDA GPU is SM 10.0+ (compute capability >= 100). Weakly typed
    INT8+FP8 builds are refused there (build with strongly_typed=True).
    STRONGLY_TYPED_SUPPORTED: strongly typed networks can be built; always True (the builder is
    ours, not an installed TensorRT's).
    """

    IS_BLACKWELL: bool
    STRONGLY_TYPED_SUPPORTED: bool
    IS_JETSON: bool
    HAS_GPU: bool
    CUDA_BACKEND: bool


def _detect() -> Flags:
    info = _trtutils.platform_info()
    return Flags(
        IS_BLACKWELL=info.is_blackwell,
        STRONGLY_TYPED_SUPPORTED=info.strongly_typed_supported,
        IS_JETSON=info.is_jetson,
        HAS_GPU=info.gpu_count > 0,
        CUDA_BACKEND=info.cuda_toolkit_at_build,
    )


FLAGS: Flags = _detect()
