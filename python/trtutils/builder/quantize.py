"""quantize_onnx: a float ONNX model + calibration data -> a Q/DQ ONNX model (the original
trtutils' wrapper of nvidia-modelopt, here the library's own quantizer: include/trtutils/
quantize.h has the modes, calibrators and placement rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .. import _trtutils

QuantizeResult = _trtutils.QuantizeResult


def quantize_onnx(
    onnx_path: Path | str,
    output_path: Path | str,
    calibration_data: Path | str | None = None,
    quantize_mode: str = "int8",
    calibration_method: str = "max",
    *,
    image_preprocess: _trtutils.ImageBatcherOptions | None = None,
    calibrate_per_node: bool = False,
    verbose: bool | None = None,
    batch_size: int = 1,
    percentile: float = 99.99,
    num_bins: int = 2048,
    op_types_to_quantize: Sequence[str] | None = None,
    op_types_to_exclude: Sequence[str] | None = None,
    nodes_to_exclude: Sequence[str] | None = None,
    high_precision_dtype: str = "fp32",
    keep_detection_head_float: bool = True,
    block_size: int = 128,
    eval_batches: int | None = None,
    report_per_tensor: bool = False,
    min_sqnr: float | None = None,
    max_calibration_batches: int = 0,
    bias_correction: str = "auto",
    weight_rounding: str = "auto",
    num_threads: int = 0,
    write_report: bool = True,
    plot: Path | str | None = None,
) -> Path:
    """Quantize ``onnx_path`` into ``output_path`` (written atomically); returns its resolved
    path. quantize_mode "int8" | "fp8" | "int4"; calibration_method "max" | "entropy" |
    "percentile" | "mse" (int4: "rtn" | "awq_clip"). calibration_data: a .npy whose first axis
    is samples, or a directory of images, preprocessed as image_preprocess says (an
    ImageBatcherOptions; start from ``QuantizeOptions().image_preprocess``, quantize's defaults:
    the model input's size and dtype, linear resize, values in [0, 1]). eval_batches None: the
    report runs on about 32 calibration samples (none held out); N: the last N batches are held
    out for it. Raises MissingFileError (a FileNotFoundError) for a
    missing model or calibration file, InvalidArgumentError (a ValueError) for an invalid mode
    or method. Use :func:`quantize_onnx_report` for the accuracy report."""
    quantize_onnx_report(**locals())
    return Path(output_path).resolve()


def quantize_onnx_report(
    onnx_path: Path | str,
    output_path: Path | str,
    calibration_data: Path | str | None = None,
    quantize_mode: str = "int8",
    calibration_method: str = "max",
    **options: object,
) -> QuantizeResult:
    """As :func:`quantize_onnx`, returning the library's QuantizeResult (quantized nodes,
    per-output SQNR, skipped candidates, report path)."""
    o = _trtutils.QuantizeOptions()
    o.onnx_path = str(onnx_path)
    o.output_path = str(output_path)
    o.calibration_data = "" if calibration_data is None else str(calibration_data)
    o.quantize_mode = quantize_mode
    o.calibration_method = calibration_method
    verbose = options.pop("verbose", None)
    o.progress = bool(verbose)  # as ImageBatcher's
    for key in ("op_types_to_quantize", "op_types_to_exclude", "nodes_to_exclude"):
        options[key] = list(options.get(key) or [])  # type: ignore[call-overload]
    image_preprocess = options.pop("image_preprocess", None)
    if image_preprocess is not None:
        o.image_preprocess = image_preprocess
    plot = options.pop("plot", None)
    o.plot = "" if plot is None else str(plot)
    for key, value in options.items():
        if not hasattr(o, key):
            raise TypeError(f"quantize_onnx() got an unexpected keyword argument {key!r}")
        setattr(o, key, value)
    level = _trtutils.log_level()
    if verbose:
        _trtutils.set_log_level(max(level, 2))
    try:
        return _trtutils.quantize_onnx(o)
    finally:
        _trtutils.set_log_level(level)
