"""build_engine: an ONNX model -> an engine file, with the original trtutils' keyword arguments
mapped onto the library's BuildConfig (include/trtutils/builder.h has the rules).

Strongly typed (strongly_typed=True): precision comes from the graph (input dtypes, Cast, Q/DQ);
combining it with fp16/int8/fp8, calibration_cache/data_batcher or layer_precision raises
ValueError with the seed's texts. Tensor formats are accepted with a warning (the dtype part is
ignored). Weakly typed: fp16/int8/fp8 allow those precisions per layer; INT8 scales come from
calibration_cache, data_batcher (an ImageBatcher) or calibration_data (a .npy).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import _trtutils
from .._dtypes import to_data_type

_DEFAULTS = {"target_sm": 0}


def set_target_sm(sm: int) -> None:
    """The target GPU (SM, e.g. 87 for Jetson Orin, 90, 100) of builds that pass no target_sm;
    0 (the default): this machine's GPU, none without one. With 87 a non-Jetson host builds DLA
    engines whose DLA layers run emulated."""
    _DEFAULTS["target_sm"] = int(sm)


def target_sm() -> int:
    """The default set by :func:`set_target_sm`."""
    return _DEFAULTS["target_sm"]


def _shape_map(shapes: Any, what: str) -> dict[str, list[int]]:
    """[(name, shape), ...] or {name: shape} -> {name: [dims]}."""
    if shapes is None:
        return {}
    items = shapes.items() if isinstance(shapes, Mapping) else shapes
    out: dict[str, list[int]] = {}
    for entry in items:
        try:
            name, shape = entry
        except (TypeError, ValueError) as e:
            raise ValueError(f"{what}: expected (input name, shape) pairs, got {entry!r}") from e
        if name in out:
            raise ValueError(f"{what}: input '{name}' is given twice")
        out[str(name)] = [int(d) for d in shape]
    return out


def _layer_precision(entries: Any) -> list[tuple[str, _trtutils.DataType]]:
    """[(layer index or name, dtype or None), ...]; None entries are skipped (the original's
    'leave this layer alone')."""
    out = []
    for layer, dtype in entries or []:
        if dtype is not None:
            out.append((str(layer), to_data_type(dtype)))
    return out


def _tensor_format(spec: Any) -> _trtutils.TensorFormat:
    """'fp16:chw4' | 'HWC' | TensorFormat | (dtype, format) | (name, dtype, format)."""
    if isinstance(spec, _trtutils.TensorFormat):
        return spec
    if isinstance(spec, str):
        return _trtutils.parse_tensor_format(spec)
    parts = list(spec)
    if len(parts) == 3:  # the original's (tensor name, dtype, format): one per tensor, in order
        parts = parts[1:]
    if len(parts) != 2:
        raise ValueError(f"tensor format: expected (dtype, format), got {spec!r}")
    dtype, fmt = parts
    fmt_name = getattr(fmt, "name", fmt)
    return _trtutils.TensorFormat(
        _trtutils.DataType.undefined if dtype is None else to_data_type(dtype), str(fmt_name)
    )


def _path(value: Path | str | None) -> str:
    return "" if value is None else str(value)


def _batcher_options(data_batcher: Any) -> _trtutils.ImageBatcherOptions | None:
    if data_batcher is None:
        return None
    options = getattr(data_batcher, "options", data_batcher)
    if not isinstance(options, _trtutils.ImageBatcherOptions):
        raise TypeError("data_batcher must be a trtutils.builder.ImageBatcher")
    return options


def make_build_config(
    *,
    strongly_typed: bool = False,
    fp16: bool | None = None,
    int8: bool | None = None,
    fp8: bool | None = None,
    tf32: bool = True,
    calibration_cache: Path | str | None = None,
    calibration_data: Path | str | None = None,
    data_batcher: Any = None,
    calibration_batch_size: int = 8,
    calibration_algorithm: str = "entropy",
    layer_precision: Any = None,
    precision_constraints: str | None = None,
    prefer_precision_constraints: bool = False,
    input_tensor_formats: Sequence[Any] | None = None,
    output_tensor_formats: Sequence[Any] | None = None,
    shapes: Any = None,
    min_shapes: Any = None,
    opt_shapes: Any = None,
    max_shapes: Any = None,
    workspace: float | None = 4.0,
    optimization_level: int = 3,
    timing_cache: Path | str | None = None,
    cache: bool | None = None,
    verbose: bool | None = None,
    backend: str = "auto",
    target_sm: int | None = None,
    no_fallback: bool = False,
    allow_float_fallback: bool = False,
    num_threads: int = 0,
    gpu_switches: Mapping[str, Any] | None = None,
) -> _trtutils.BuildConfig:
    """The BuildConfig for build_engine's keyword arguments (see there)."""
    c = _trtutils.BuildConfig()
    c.strongly_typed = bool(strongly_typed)
    c.fp16, c.int8, c.fp8, c.tf32 = bool(fp16), bool(int8), bool(fp8), bool(tf32)
    c.calibration_cache = _path(calibration_cache)
    c.calibration_data = _path(calibration_data)
    c.data_batcher = _batcher_options(data_batcher)
    c.calibration_batch_size = int(calibration_batch_size)
    c.calibration_algorithm = calibration_algorithm
    c.layer_precision = _layer_precision(layer_precision)
    if precision_constraints is None:
        precision_constraints = "prefer" if prefer_precision_constraints else "none"
    c.precision_constraints = precision_constraints
    c.input_tensor_formats = [_tensor_format(f) for f in input_tensor_formats or []]
    c.output_tensor_formats = [_tensor_format(f) for f in output_tensor_formats or []]
    c.shapes = _shape_map(shapes, "shapes")
    c.min_shapes = _shape_map(min_shapes, "min_shapes")
    c.opt_shapes = _shape_map(opt_shapes, "opt_shapes")
    c.max_shapes = _shape_map(max_shapes, "max_shapes")
    c.workspace = 0 if not workspace else int(float(workspace) * (1 << 30))
    c.optimization_level = int(optimization_level)
    c.timing_cache = _path(timing_cache)
    c.cache = bool(cache)
    c.verbose = bool(verbose)
    c.progress = bool(verbose)  # as ImageBatcher's
    c.backend = backend
    c.target_sm = _DEFAULTS["target_sm"] if target_sm is None else int(target_sm)
    c.no_fallback = bool(no_fallback)
    c.allow_float_fallback = bool(allow_float_fallback)
    c.num_threads = int(num_threads)
    c.gpu_switches = {str(k): str(v) for k, v in (gpu_switches or {}).items()}
    return c


def _refuse_tensorrt_only(
    default_device: Any, dla_core: int | None, layer_device: Any, hooks: Any
) -> None:
    """The original's TensorRT-network arguments that have no meaning here."""
    device = str(getattr(default_device, "name", default_device)).lower()
    if device not in ("gpu", "dla"):
        raise ValueError(f"Invalid default device: {default_device}. Must be one of: gpu, dla")
    if device == "dla" or dla_core is not None or layer_device:
        raise ValueError(
            "DLA placement is automatic here: use trtutils.builder.build_dla_engine(onnx, output, "
            "dla_core=...)"
        )
    if hooks:
        raise _trtutils.NotSupportedError(
            "hooks edit a TensorRT network; trtutils builds from the ONNX graph (edit the ONNX "
            "model instead)"
        )


def build_engine(
    onnx: Path | str,
    output: Path | str,
    *,
    strongly_typed: bool = False,
    fp16: bool | None = None,
    int8: bool | None = None,
    fp8: bool | None = None,
    calibration_cache: Path | str | None = None,
    data_batcher: Any = None,
    layer_precision: Sequence[tuple[int | str, Any]] | None = None,
    input_tensor_formats: Sequence[Any] | None = None,
    output_tensor_formats: Sequence[Any] | None = None,
    shapes: Sequence[tuple[str, Sequence[int]]] | Mapping[str, Sequence[int]] | None = None,
    workspace: float | None = 4.0,
    optimization_level: int = 3,
    timing_cache: Path | str | None = None,
    cache: bool | None = None,
    verbose: bool | None = None,
    prefer_precision_constraints: bool = False,
    default_device: Any = "gpu",
    dla_core: int | None = None,
    layer_device: Any = None,
    hooks: Sequence[Callable[[Any], Any]] | None = None,
    gpu_fallback: bool = False,
    direct_io: bool = False,
    reject_empty_algorithms: bool = False,
    ignore_timing_mismatch: bool = False,
    calibration_data: Path | str | None = None,
    calibration_batch_size: int = 8,
    calibration_algorithm: str = "entropy",
    precision_constraints: str | None = None,
    min_shapes: Any = None,
    opt_shapes: Any = None,
    max_shapes: Any = None,
    tf32: bool = True,
    backend: str = "auto",
    target_sm: int | None = None,
    no_fallback: bool = False,
    allow_float_fallback: bool = False,
    num_threads: int = 0,
    gpu_switches: Mapping[str, Any] | None = None,
) -> _trtutils.BuildResult:
    """Build an engine from an ONNX model and write it to ``output`` (atomically; nothing is
    written on any error). Returns the BuildResult (layers per precision, warnings, time).

    The original's arguments: strongly_typed, fp16, int8, fp8, calibration_cache, data_batcher
    (an ImageBatcher), layer_precision [(layer index or name, dtype or None)], input/
    output_tensor_formats (one per IO tensor in the model's order: "fp16:chw4", (dtype, format)
    or the original's (name, dtype, format)), shapes [(input name, shape)], workspace (GiB;
    None or 0: no limit), optimization_level 0-5 (>= 3 times tactics), timing_cache (a file or
    "global"), cache (reuse an engine built from the same model bytes and config), verbose,
    prefer_precision_constraints. default_device "dla", dla_core and layer_device: use
    build_dla_engine. hooks: refused (no TensorRT network). gpu_fallback, direct_io,
    reject_empty_algorithms, ignore_timing_mismatch: accepted, no effect (TensorRT builder
    flags without an equivalent here).

    trtutils (C++) additions: calibration_data (.npy of samples) with calibration_batch_size
    and calibration_algorithm ("entropy" | "minmax"); precision_constraints ("none" | "prefer" |
    "obey"); min/opt/max_shapes (an optimization profile); tf32; backend ("auto" | "cpu" |
    "cuda" | "tensorrt"); target_sm (default: set_target_sm's, else this machine's GPU);
    no_fallback (refuse layers without a GPU kernel); allow_float_fallback (int8 without
    calibration data on a model without Q/DQ nodes builds an all-float engine instead of raising);
    num_threads; gpu_switches ({"NAME":
    "VALUE"}: the CUDA kernel switches recorded in a GPU engine, as `build --gpu_switch`).

    Raises ValueError (the seed's rules, e.g. "strongly_typed=True derives precision from the
    ONNX graph; remove fp16/int8/fp8 builder flags."), MissingFileError for a missing model,
    other TrtutilsError subclasses for what the build finds.
    """
    _refuse_tensorrt_only(default_device, dla_core, layer_device, hooks)
    config = make_build_config(
        strongly_typed=strongly_typed, fp16=fp16, int8=int8, fp8=fp8, tf32=tf32,
        calibration_cache=calibration_cache, calibration_data=calibration_data,
        data_batcher=data_batcher, calibration_batch_size=calibration_batch_size,
        calibration_algorithm=calibration_algorithm, layer_precision=layer_precision,
        precision_constraints=precision_constraints,
        prefer_precision_constraints=prefer_precision_constraints,
        input_tensor_formats=input_tensor_formats, output_tensor_formats=output_tensor_formats,
        shapes=shapes, min_shapes=min_shapes, opt_shapes=opt_shapes, max_shapes=max_shapes,
        workspace=workspace, optimization_level=optimization_level, timing_cache=timing_cache,
        cache=cache, verbose=verbose, backend=backend, target_sm=target_sm,
        no_fallback=no_fallback, allow_float_fallback=allow_float_fallback,
        num_threads=num_threads, gpu_switches=gpu_switches,
    )  # fmt: skip
    if strongly_typed and (input_tensor_formats or output_tensor_formats):
        warnings.warn(
            "strongly_typed=True: the dtype part of input/output_tensor_formats is ignored, only "
            "the tensor format applies",
            stacklevel=2,
        )
    return _trtutils.build_engine(str(onnx), str(output), config)
