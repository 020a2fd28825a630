"""Type stubs of the _trtutils extension (python/src): pybind11 over include/trtutils/."""

from __future__ import annotations

import enum
import os
from typing import Optional

import numpy as np

_Path = str | os.PathLike[str]
__version__: str

# ---- errors (errors.cpp) -------------------------------------------------------------------
class TrtutilsError(RuntimeError):
    """An error reported by the library (its one-line message)."""

class InvalidArgumentError(TrtutilsError, ValueError):
    """Bad input: arguments, shapes, dtypes, files that do not parse."""

class NotSupportedError(TrtutilsError, NotImplementedError):
    """Valid input that this build cannot handle (an op, a dtype)."""

class FileError(TrtutilsError, OSError):
    """A file could not be read or written."""

class MissingFileError(FileError, FileNotFoundError):
    """A file the call needs does not exist."""

class OutOfRangeError(TrtutilsError):
    """A size over a limit, an offset outside a buffer."""

class InternalError(TrtutilsError):
    """A bug in trtutils."""

# ---- dtypes (dtypes.cpp) -------------------------------------------------------------------
class DataType(enum.Enum):
    """Element types; values are ONNX's TensorProto codes, names numpy's / ONNX's."""

    undefined = 0
    float32 = 1
    uint8 = 2
    int8 = 3
    uint16 = 4
    int16 = 5
    int32 = 6
    int64 = 7
    string = 8
    bool = 9
    float16 = 10
    float64 = 11
    uint32 = 12
    uint64 = 13
    bfloat16 = 16
    float8e4m3fn = 17
    float8e4m3fnuz = 18
    float8e5m2 = 19
    float8e5m2fnuz = 20
    uint4 = 21
    int4 = 22

def dtype_from_name(name: str) -> DataType:
    """'float32', 'fp16', 'half', 'int8', 'fp8', ... -> DataType (ValueError if unknown)."""

def dtype_name(dtype: DataType) -> str: ...
def numpy_dtype(dtype: DataType) -> np.dtype:
    """The numpy dtype arrays of this DataType come back as (float32 for bfloat16 / float8)."""

# ---- platform (platform.cpp) ---------------------------------------------------------------
class GpuInfo:
    name: str
    sm_major: int
    sm_minor: int
    total_memory_bytes: int

class PlatformInfo:
    version: str
    cpu_model: str
    cpu_cores: int
    gpu_count: int
    gpu: GpuInfo
    gpu_status: str
    cuda_toolkit_at_build: bool
    is_jetson: bool
    board_model: str
    is_blackwell: bool
    """IS_BLACKWELL: True on SM 10.0+ GPUs."""
    strongly_typed_supported: bool
    """STRONGLY_TYPED_SUPPORTED: always True (our builder)."""

def platform_info() -> PlatformInfo:
    """This machine: CPU, the first CUDA GPU, the seed's flags (queried once)."""

def set_log_level(level: int) -> None:
    """0 errors, 1 warnings (the default), 2 info, 3 verbose."""

def log_level() -> int: ...
def set_memory_limit(bytes: int) -> None:
    """The largest allocation the library makes (the CLI's --max_memory)."""

def memory_limit() -> int: ...

# ---- ImageBatcher (image_batcher.cpp) ------------------------------------------------------
class ImageBatcherOptions:
    """include/trtutils/image_batcher.h's options; order / resize_method / color_order by name."""

    image_dir: str
    shape: list[int]
    dtype: DataType
    batch_size: int
    order: str
    max_images: Optional[int]
    resize_method: str
    input_scale: Optional[tuple[float, float]]
    mean: list[float]
    std: list[float]
    color_order: str
    pad_value: float
    keep_partial: bool
    num_threads: int
    prefetch_batches: int
    progress: bool
    def __init__(self) -> None: ...

class ImageBatcherCore:
    """Validates the options and lists the directory; errors before anything is decoded."""

    def __init__(self, options: ImageBatcherOptions) -> None: ...
    num_batches: int
    batch_size: int
    num_images: int
    image_paths: list[str]
    batch_shape: list[int]
    options: ImageBatcherOptions
    def next_batch(self) -> np.ndarray | None:
        """The next batch; None after the last one (the GIL is released while decoding)."""
    def reset(self) -> None: ...
    def save_calibration_data(self, path: _Path) -> None:
        """Every batch along axis 0 as one .npy, written atomically; leaves the batcher reset."""

# ---- quantize (quantize.cpp) ---------------------------------------------------------------
class QuantizeOptions:
    """include/trtutils/quantize.h's options (the original's keyword arguments)."""

    onnx_path: str
    output_path: str
    calibration_data: str
    image_preprocess: ImageBatcherOptions
    quantize_mode: str
    calibration_method: str
    batch_size: int
    percentile: float
    num_bins: int
    op_types_to_quantize: list[str]
    op_types_to_exclude: list[str]
    nodes_to_exclude: list[str]
    high_precision_dtype: str
    keep_detection_head_float: bool
    block_size: int
    eval_batches: Optional[int]
    report_per_tensor: bool
    min_sqnr: Optional[float]
    max_calibration_batches: int
    calibrate_per_node: bool
    bias_correction: str
    weight_rounding: str
    num_threads: int
    write_report: bool
    progress: bool
    plot: str
    def __init__(self) -> None: ...

class QuantizeOutputMetrics:
    name: str
    sqnr_db: float
    cosine: float
    max_abs_error: float

class QuantizeTensorMetrics:
    name: str
    node: str
    sqnr_db: float
    amax: float
    scale: float

class QuantizeResult:
    already_quantized: bool
    num_quantized_nodes: int
    num_qdq_pairs: int
    num_weights_quantized: int
    num_bias_corrected: int
    num_gptq_rounded: int
    calibration_samples: int
    eval_samples: int
    eval_held_out: bool
    preprocessing: str
    outputs: list[QuantizeOutputMetrics]
    tensors: list[QuantizeTensorMetrics]
    excluded_by_fallback: list[str]
    excluded_detection_head: list[str]
    skipped: list[str]
    calibration_rejected: list[str]
    calibration_methods_used: dict[str, int]
    report_path: str

def quantize_onnx(options: QuantizeOptions) -> QuantizeResult:
    """Float ONNX + calibration data -> Q/DQ ONNX (atomically) and its report; no GIL."""

def quantize_mode_names() -> list[str]: ...
def calibration_method_names(quantize_mode: str) -> list[str]: ...

# ---- builder (builder.cpp) -----------------------------------------------------------------
class TensorFormat:
    """One IO tensor's (dtype, format); dtype undefined keeps the model's."""

    dtype: DataType
    format: str
    def __init__(self, dtype: DataType = ..., format: str = "LINEAR") -> None: ...

def parse_tensor_format(text: str) -> TensorFormat:
    """'fp16:chw4', 'int8:LINEAR', 'HWC' -> TensorFormat (InvalidArgumentError otherwise)."""

def tensor_format_names() -> list[str]: ...

class BuildConfig:
    """include/trtutils/builder.h's BuildConfig (workspace in bytes, 0: no limit)."""

    strongly_typed: bool
    fp16: bool
    int8: bool
    fp8: bool
    tf32: bool
    calibration_cache: str
    calibration_data: str
    data_batcher: Optional[ImageBatcherOptions]
    calibration_batch_size: int
    calibration_algorithm: str
    layer_precision: list[tuple[str, DataType]]
    precision_constraints: str
    input_tensor_formats: list[TensorFormat]
    output_tensor_formats: list[TensorFormat]
    shapes: dict[str, list[int]]
    min_shapes: dict[str, list[int]]
    opt_shapes: dict[str, list[int]]
    max_shapes: dict[str, list[int]]
    workspace: int
    optimization_level: int
    timing_cache: str
    cache: bool
    verbose: bool
    backend: str
    target_sm: int
    no_fallback: bool
    allow_float_fallback: bool
    gpu_switches: dict[str, str]
    num_threads: int
    progress: bool
    def __init__(self) -> None: ...

class BuildResult:
    engine_path: str
    from_cache: bool
    calibration_cache_written: str
    calibration_preprocessing: str
    warnings: list[str]
    num_layers: int
    layers_per_precision: dict[str, int]
    fallback_layers: list[str]
    seconds: float

def build_engine(onnx: _Path, output: _Path, config: BuildConfig) -> BuildResult:
    """Validates (the seed's rules: ValueError), builds, writes `output` atomically; no GIL."""

def validate_build_config(config: BuildConfig, target_sm: int) -> list[str]:
    """The seed's rules alone: ValueError, or the warnings."""

# ---- DLA (dla.cpp) -------------------------------------------------------------------------
class DlaLayerReport:
    index: int
    name: str
    op: str
    dla: bool
    rule: str
    detail: str
    limit: str
    source: str

class DlaChunkReport:
    begin: int
    end: int
    first: str
    last: str
    layers: int

class DlaReport:
    layers: list[DlaLayerReport]
    chunks: list[DlaChunkReport]
    selected: list[DlaChunkReport]
    dla_layers: int

class DlaCheckOptions:
    shapes: dict[str, list[int]]
    max_chunks: int
    min_layers: int
    def __init__(self) -> None: ...

class DlaConfig:
    dla_core: int
    max_chunks: int
    min_layers: int
    dry_run: bool
    build: BuildConfig
    def __init__(self) -> None: ...

class DlaBuildResult:
    build: BuildResult
    chunks: list[DlaChunkReport]
    dla_layers: int
    other_layers: int
    emulated: bool
    emulation: str

def can_run_on_dla(onnx: _Path, options: DlaCheckOptions) -> DlaReport: ...
def build_dla_engine(onnx: _Path, output: _Path, config: DlaConfig) -> DlaBuildResult: ...

# ---- runtime (engine.cpp) ------------------------------------------------------------------
class EngineTensorInfo:
    name: str
    dtype: DataType
    shape: list[int]
    """-1 for a dynamic dimension."""
    dim_names: list[str]
    min_shape: list[int]
    opt_shape: list[int]
    max_shape: list[int]
    format: str

class EngineLayerInfo:
    index: int
    name: str
    op: str
    precision: str
    device: str
    kernel: str
    tactic: str
    layout: str
    inputs: list[str]
    outputs: list[str]
    input_shapes: list[str]
    output_shapes: list[str]

class LayerTiming:
    name: str
    op: str
    total_ms: float
    calls: int
    kernel: str

class IoTimes:
    h2d_ms: float
    compute_ms: float
    d2h_ms: float

class ExecutionContext:
    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """{input name: array} -> {output name: array}; no GIL while running; inputs read in
        place when C-contiguous, outputs are views of the result buffers."""
    profile: list[LayerTiming]
    peak_activation_bytes: int
    weight_bytes: int
    last_io_times: IoTimes

class Engine:
    @staticmethod
    def load(path: _Path, backend: str = "auto") -> Engine:
        """Loads and checks an engine file (magic, version, checksum, target)."""
    inputs: list[EngineTensorInfo]
    outputs: list[EngineTensorInfo]
    layers: list[EngineLayerInfo]
    backend: str
    runtime_backend: str
    has_gpu_plan: bool
    target_sm: int
    strongly_typed: bool
    weight_bytes: int
    device_weight_bytes: int
    activation_arena_bytes: int
    info_json: str
    format_version: int
    producer: str
    inspect_json: str
    path: str
    def create_execution_context(
        self, num_threads: int = 0, profile: bool = False, cuda_graph: bool = True,
        timing_cache: str = "",
    ) -> ExecutionContext: ...

# ---- CLI (cli.cpp) -------------------------------------------------------------------------
def run_cli(args: list[str]) -> int:
    """`trtutils ARGS...` in this process; the exit code (0, 1, or 2 for usage errors and
    rejected option combinations)."""

def install_interrupt_cleanup() -> None: ...

def _console_to_python(terminal: bool) -> None:
    """Route the library's log lines and progress to sys.stderr (trtutils/console.h);
    terminal: redraw progress bars in place ('\\r')."""

def _console_to_stderr() -> None:
    """Back to file descriptor 2 (registered with atexit)."""
