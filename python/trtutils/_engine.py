"""TRTEngine: an engine file loaded for execution, with the original trtutils' interface."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from . import _trtutils
from ._dtypes import to_numpy_dtype


def _static_shape(info: _trtutils.EngineTensorInfo) -> tuple[int, ...]:
    """The tensor's shape, dynamic dimensions at the profile's opt size (1 without a profile)."""
    opt = list(info.opt_shape)
    shape = []
    for d, size in enumerate(info.shape):
        if size >= 0:
            shape.append(size)
        else:
            shape.append(opt[d] if d < len(opt) and opt[d] >= 0 else 1)
    return tuple(shape)


class TRTEngine:
    """An engine built by trtutils, loaded for execution (one execution context).

    Inputs and outputs are numpy arrays. ``execute`` takes one array per input in the engine's
    input order (or a dict by name) and returns one array per output in output order; a
    C-contiguous input of the engine's dtype is read in place, outputs are views of the result
    buffers (no copies). The GIL is released while the engine runs.
    """

    def __init__(
        self,
        engine_path: Path | str,
        warmup_iterations: int = 5,
        *,
        warmup: bool | None = None,
        backend: str = "auto",
        num_threads: int = 0,
        profile: bool = False,
        timing_cache: Path | str | None = None,
        seed: int = 0,
        verbose: bool | None = None,
    ) -> None:
        """Load ``engine_path`` (checked: magic, version, checksum, target backend).

        backend: "cpu", "cuda" or "auto" (the engine's own backend when usable here).
        num_threads: CPU threads (0: all cores). profile: time every layer (``profile``).
        timing_cache: CUDA engines' kernel-choice cache file (or "global").
        warmup: run ``warmup_iterations`` random inputs first (default: no warm-up).
        """
        self._path = Path(engine_path)
        self._engine = _trtutils.Engine.load(str(engine_path), backend)
        self._context = self._engine.create_execution_context(
            num_threads, profile, True, str(timing_cache) if timing_cache else ""
        )
        self._inputs = list(self._engine.inputs)
        self._outputs = list(self._engine.outputs)
        self._rng = np.random.default_rng(seed)
        self._random_input: list[np.ndarray] | None = None
        if warmup:
            for _ in range(warmup_iterations):
                self.mock_execute()

    # ---- the engine -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The engine file's stem."""
        return self._path.stem

    @property
    def engine(self) -> _trtutils.Engine:
        """The underlying engine (layers, build info, backend)."""
        return self._engine

    @property
    def backend(self) -> str:
        """The backend it was built for ("cpu", "cuda")."""
        return self._engine.backend

    @property
    def runtime_backend(self) -> str:
        """The backend that executes it here."""
        return self._engine.runtime_backend

    @property
    def strongly_typed(self) -> bool:
        return self._engine.strongly_typed

    @property
    def profile(self) -> list[_trtutils.LayerTiming]:
        """Per-layer times so far (with ``profile=True``)."""
        return list(self._context.profile)

    # ---- IO ---------------------------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self._inputs]

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        """Dynamic dimensions at the optimization profile's opt size."""
        return [_static_shape(t) for t in self._inputs]

    @property
    def input_dtypes(self) -> list[np.dtype]:
        return [to_numpy_dtype(t.dtype) for t in self._inputs]

    @property
    def input_spec(self) -> list[tuple[list[int], np.dtype]]:
        return [(list(s), d) for s, d in zip(self.input_shapes, self.input_dtypes)]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self._outputs]

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        """Dynamic dimensions at the opt size (the real ones depend on the inputs)."""
        return [_static_shape(t) for t in self._outputs]

    @property
    def output_dtypes(self) -> list[np.dtype]:
        return [to_numpy_dtype(t.dtype) for t in self._outputs]

    @property
    def output_spec(self) -> list[tuple[list[int], np.dtype]]:
        return [(list(s), d) for s, d in zip(self.output_shapes, self.output_dtypes)]

    # ---- running ----------------------------------------------------------------------------
    def execute(
        self,
        data: Sequence[np.ndarray] | Mapping[str, np.ndarray] | np.ndarray,
        *,
        verbose: bool | None = None,
    ) -> list[np.ndarray]:
        """Run the engine: one array per input (or {name: array}, or one array for a
        one-input engine) -> one array per output.

        Raises InvalidArgumentError naming an input of the wrong dtype or shape, ValueError for
        the wrong number of inputs.
        """
        if isinstance(data, np.ndarray):
            data = [data]
        if isinstance(data, Mapping):
            feeds = dict(data)
        else:
            arrays = list(data)
            if len(arrays) != len(self._inputs):
                raise ValueError(
                    f"the engine has {len(self._inputs)} input(s) {self.input_names}, "
                    f"got {len(arrays)} array(s)"
                )
            feeds = dict(zip(self.input_names, arrays))
        results = self._context.execute(feeds)
        return [results[name] for name in self.output_names]

    __call__ = execute

    def get_random_input(self, *, new: bool | None = None, verbose: bool | None = None) -> list[np.ndarray]:
        """Random inputs of the engine's shapes and dtypes (floats in [0, 1), integers in
        [0, 10), as the CLI's); the same arrays on every call unless ``new``."""
        if self._random_input is None or new:
            self._random_input = [self._random_array(s, d) for s, d in self.input_spec]
        return self._random_input

    def _random_array(self, shape: list[int], dtype: np.dtype) -> np.ndarray:
        if np.issubdtype(dtype, np.floating):
            return self._rng.random(shape, dtype=np.float32).astype(dtype)
        if dtype == np.bool_:
            return self._rng.integers(0, 2, shape).astype(np.bool_)
        return self._rng.integers(0, 10, shape).astype(dtype)

    def mock_execute(
        self, data: Sequence[np.ndarray] | None = None, *, verbose: bool | None = None
    ) -> list[np.ndarray]:
        """Execute on ``data`` or on ``get_random_input()``."""
        return self.execute(self.get_random_input() if data is None else data)

    def __repr__(self) -> str:
        return (
            f"TRTEngine({str(self._path)!r}, backend={self.runtime_backend!r}, "
            f"inputs={list(zip(self.input_names, self.input_shapes))})"
        )
