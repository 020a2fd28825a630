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


def _running_elsewhere() -> int:
    """Other runnable threads on the machine (/proc/stat's procs_running, the fewest of five
    samples 1 ms apart, less this one: a competing process runs in every sample, a command
    started beside this one only while it starts); -1 when unknown."""
    import time

    fewest = -1
    for i in range(5):
        if i:
            time.sleep(0.001)
        try:
            with open("/proc/stat", encoding="ascii") as f:
                n = next(int(line.split()[1]) for line in f if line.startswith("procs_running "))
        except (OSError, ValueError, StopIteration):
            return -1
        fewest = n if fewest < 0 else min(fewest, n)
    return max(0, fewest - 1)


# How idle OpenMP threads (ours and oneDNN's) wait, chosen as the CLI does
# (tools/cli/wait_policy.h): a brief spin (GOMP_SPINCOUNT=10000, ~0.1 ms) where every core is
# free, since a wake-up per layer costs tens of microseconds; otherwise they sleep at once, since
# spinning makes runs on a shared machine many times slower. libgomp reads this when it is
# loaded, which is the import below unless another module loaded it first; a policy the user set
# is kept.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    # The thread count is not known yet (each call sets its own): all cores, so no other load.
    if _running_elsewhere() == 0:
        _os.environ["GOMP_SPINCOUNT"] = "10000"
    else:
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
