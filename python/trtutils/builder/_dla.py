"""DLA builds for Jetson Orin (SM 87): can_run_on_dla and build_dla_engine (include/trtutils/
dla.h). The DLA layers of an engine built here run emulated on the engine's backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import _trtutils
from ._build import _shape_map, make_build_config


def dla_report(
    onnx: Path | str,
    *,
    shapes: Sequence[tuple[str, Sequence[int]]] | Mapping[str, Sequence[int]] | None = None,
    max_chunks: int = 1,
    min_layers: int = 20,
) -> _trtutils.DlaReport:
    """Every layer checked against NVIDIA's DLA restrictions (the failed rule and why), the
    DLA-able chunks, and those a DLA build would place (max_chunks, min_layers)."""
    o = _trtutils.DlaCheckOptions()
    o.shapes = _shape_map(shapes, "shapes")
    o.max_chunks = int(max_chunks)
    o.min_layers = int(min_layers)
    return _trtutils.can_run_on_dla(str(onnx), o)


def can_run_on_dla(
    onnx: Path | str,
    *,
    shapes: Sequence[tuple[str, Sequence[int]]] | Mapping[str, Sequence[int]] | None = None,
    verbose_layers: bool | None = None,
    verbose_chunks: bool | None = None,
) -> tuple[bool, list[tuple[list[str], int, int, bool]]]:
    """Whether every layer can run on the DLA, and the model split into runs of layers on one
    device: (layer names, first index, last index (inclusive), on the DLA), as the original."""
    report = dla_report(onnx, shapes=shapes)
    chunks: list[tuple[list[str], int, int, bool]] = []
    for layer in report.layers:
        if chunks and chunks[-1][3] == layer.dla:
            names, start, _, dla = chunks[-1]
            chunks[-1] = (names + [layer.name], start, layer.index, dla)
        else:
            chunks.append(([layer.name], layer.index, layer.index, layer.dla))
        if verbose_layers:
            why = "" if layer.dla else f" ({layer.rule}: {layer.detail})"
            print(f"Layer {layer.index}: {layer.name}, {layer.op}, DLA: {layer.dla}{why}")
    if verbose_chunks:
        print(f"Found {len(chunks)} chunks of layers")
        for i, (names, start, end, dla) in enumerate(chunks):
            print(f"\tChunk {i}: [{start} - {end}], {len(names)} layers, {'DLA' if dla else 'GPU'}")
    return all(layer.dla for layer in report.layers), chunks


def build_dla_engine(
    onnx: Path | str,
    output: Path | str,
    dla_core: int = 0,
    *,
    strongly_typed: bool = False,
    data_batcher: Any = None,
    calibration_cache: Path | str | None = None,
    max_chunks: int = 1,
    min_layers: int = 20,
    timing_cache: Path | str | None = None,
    verbose: bool | None = None,
    fp16: bool | None = None,
    int8: bool | None = None,
    fp8: bool | None = None,
    calibration_data: Path | str | None = None,
    shapes: Any = None,
    backend: str = "auto",
    target_sm: int | None = None,
    dry_run: bool = False,
    num_threads: int = 0,
) -> _trtutils.DlaBuildResult:
    """Build for Jetson Orin's DLA: the largest DLA-able chunks (at least min_layers layers, at
    most max_chunks of them) on DLA core ``dla_core``, the rest GPU-side.

    Weakly typed: DLA layers FP16, or INT8 where calibrated (data_batcher, calibration_cache or
    calibration_data). strongly_typed=True: precision from the graph's Q/DQ nodes; data_batcher,
    calibration_cache and fp8 raise ValueError. Targets: SM 87 only (target_sm, or
    set_target_sm(87) on a non-Jetson host: the DLA layers then run emulated); anything else
    raises ValueError saying why.
    """
    c = _trtutils.DlaConfig()
    c.dla_core = int(dla_core)
    c.max_chunks = int(max_chunks)
    c.min_layers = int(min_layers)
    c.dry_run = bool(dry_run)
    c.build = make_build_config(
        strongly_typed=strongly_typed, fp16=fp16, int8=int8, fp8=fp8,
        calibration_cache=calibration_cache, calibration_data=calibration_data,
        data_batcher=data_batcher, shapes=shapes, workspace=None, timing_cache=timing_cache,
        verbose=verbose, backend=backend, target_sm=target_sm, num_threads=num_threads,
    )  # fmt: skip
    return _trtutils.build_dla_engine(str(onnx), str(output), c)
