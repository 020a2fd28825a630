"""benchmark_engine: latency of an engine's execute() (the original trtutils' interface).

For trtexec-style figures (percentiles, throughput, H2D / compute / D2H split, per-layer
profile) use ``python -m trtutils benchmark --engine ...``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from ._engine import TRTEngine


@dataclass
class Metric:
    """Summary of raw measurements (seconds for latency)."""

    raw: list[float]
    mean: float = field(init=False)
    median: float = field(init=False)
    min: float = field(init=False)
    max: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.raw:
            raise ValueError("Raw data cannot be empty")
        self.mean = statistics.mean(self.raw)
        self.median = statistics.median(self.raw)
        self.min = min(self.raw)
        self.max = max(self.raw)

    def __str__(self) -> str:
        return (
            f"Metric(mean={self.mean:.6f}, median={self.median:.6f}, "
            f"min={self.min:.6f}, max={self.max:.6f})"
        )


@dataclass
class BenchmarkResult:
    latency: Metric


def benchmark_engine(
    engine: TRTEngine | Path | str,
    iterations: int = 1000,
    warmup_iterations: int = 50,
    *,
    warmup: bool | None = None,
    verbose: bool | None = None,
) -> BenchmarkResult:
    """Time ``iterations`` executions on one set of random inputs, after
    ``warmup_iterations`` untimed ones (unless ``warmup`` is False)."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if not isinstance(engine, TRTEngine):
        engine = TRTEngine(engine)
    data = engine.get_random_input()
    if warmup is None or warmup:
        for _ in range(warmup_iterations):
            engine.execute(data)
    raw = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        engine.execute(data)
        raw.append(time.perf_counter() - t0)
    result = BenchmarkResult(latency=Metric(raw))
    if verbose:
        print(f"{engine.name}: {result.latency}")
    return result
