"""trtutils: ONNX models to fast reduced-precision engines, without TensorRT.

The Python API of the original trtutils over the C++ library (the ``_trtutils`` extension):

    from trtutils.builder import quantize, build_engine, ImageBatcher
    build_engine("model_qdq.onnx", "model.engine", strongly_typed=True)
    engine = trtutils.TRTEngine("model.engine")
    outputs = engine.execute(engine.get_random_input())

Errors: the seed's rejected option combinations raise ``ValueError`` with the seed's texts;
every other library error a :class:`TrtutilsError` (a ``RuntimeError``) subclass that is also
the matching built-in (``InvalidArgumentError`` a ``ValueError``, ``MissingFileError`` a
``FileNotFoundError``, ...), with the library's one-line message.
"""

from __future__ import annotations

import atexit as _atexit
import os as _os
import sys as _sys

# Idle OpenMP threads (ours and oneDNN's) sleep instead of spinning, as in the CLI: spinning makes
# runs on a shared machine many times slower. libgomp reads this when it is loaded, which is the
# import below unless another module loaded it first; a policy the user set is kept.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

from . import _trtutils  # noqa: E402
from ._benchmark import BenchmarkResult, Metric, benchmark_engine
from ._engine import TRTEngine
from ._flags import FLAGS
from ._inspect import inspect_engine
from ._trtutils import (
    FileError,
    InternalError,
    InvalidArgumentError,
    MissingFileError,
    NotSupportedError,
    OutOfRangeError,
    TrtutilsError,
    platform_info,
    set_log_level,
)
from . import builder  # noqa: E402  (after the names builder's modules import)

__version__: str = _trtutils.__version__


def _console_is_terminal() -> bool:
    """Progress bars redraw in place on a terminal and in Jupyter (which renders '\\r')."""
    if "ipykernel" in _sys.modules:
        return True
    try:
        return bool(_sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


# The library's log lines and progress go through sys.stderr (notebooks, redirections).
_trtutils._console_to_python(_console_is_terminal())
_atexit.register(_trtutils._console_to_stderr)


def run_cli(args: list[str]) -> int:
    """Run ``trtutils ARGS...`` (the C++ CLI) in this process; returns its exit code."""
    return _trtutils.run_cli([str(a) for a in args])


__all__ = [
    "FLAGS",
    "BenchmarkResult",
    "FileError",
    "InternalError",
    "InvalidArgumentError",
    "Metric",
    "MissingFileError",
    "NotSupportedError",
    "OutOfRangeError",
    "TRTEngine",
    "TrtutilsError",
    "__version__",
    "benchmark_engine",
    "builder",
    "inspect_engine",
    "platform_info",
    "run_cli",
    "set_log_level",
]
