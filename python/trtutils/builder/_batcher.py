"""ImageBatcher: a directory of images -> the batches a vision model sees (calibration data).

Per image: decode -> channels -> resize (letterbox or linear) -> input_scale -> (x - mean) / std
-> layout -> dtype; decoded on a thread pool, in file-name order (include/trtutils/
image_batcher.h has the exact rules).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from .. import _trtutils
from .._dtypes import to_data_type

_DEFAULT_INPUT_SCALE = (0.0, 1.0)


class ImageBatcher:
    """Batches of preprocessed images, as numpy arrays.

    image_dir: *.jpg *.jpeg *.png *.bmp *.webp (not recursive). shape: (H, W, C), C in 1, 3, 4.
    dtype: float32, float16, uint8 or int8. order: "NCHW" or "NHWC". max_images: the first N
    files by name. resize_method: "letterbox" or "linear". input_scale: (lo, hi) for pixel
    values (the default is (0, 1) for float dtypes and no scaling, 0..255, for integer ones).
    Only full batches are used unless keep_partial. Errors (InvalidArgumentError,
    MissingFileError) are raised here, before any image is decoded.
    """

    def __init__(
        self,
        image_dir: Path | str,
        shape: Sequence[int],
        dtype: Any,
        batch_size: int = 8,
        order: str = "NCHW",
        max_images: int | None = None,
        resize_method: str = "letterbox",
        input_scale: tuple[float, float] | None = _DEFAULT_INPUT_SCALE,
        *,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        color_order: str = "RGB",
        pad_value: float = 114.0,
        keep_partial: bool = False,
        num_threads: int = 0,
        verbose: bool | None = None,
    ) -> None:
        o = _trtutils.ImageBatcherOptions()
        o.image_dir = str(image_dir)
        if len(shape) != 3:
            raise ValueError(f"shape must be (H, W, C), got {tuple(shape)}")
        o.shape = [int(s) for s in shape]
        o.dtype = to_data_type(dtype)
        o.batch_size = int(batch_size)
        o.order = order
        o.max_images = None if max_images is None else int(max_images)
        o.resize_method = resize_method
        if input_scale is not _DEFAULT_INPUT_SCALE:
            o.input_scale = None if input_scale is None else tuple(float(v) for v in input_scale)
        o.mean = [float(v) for v in mean or []]
        o.std = [float(v) for v in std or []]
        o.color_order = color_order
        o.pad_value = float(pad_value)
        o.keep_partial = keep_partial
        o.num_threads = num_threads
        o.progress = bool(verbose)
        self._core = _trtutils.ImageBatcherCore(o)

    @property
    def options(self) -> _trtutils.ImageBatcherOptions:
        """The validated options (what build_engine's data_batcher passes to the builder)."""
        return self._core.options

    @property
    def num_batches(self) -> int:
        return self._core.num_batches

    @property
    def batch_size(self) -> int:
        return self._core.batch_size

    @property
    def num_images(self) -> int:
        return self._core.num_images

    @property
    def image_paths(self) -> list[Path]:
        return [Path(p) for p in self._core.image_paths]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """[B, C, H, W] (NCHW) or [B, H, W, C] (NHWC)."""
        return tuple(self._core.batch_shape)

    def get_next_batch(self) -> np.ndarray | None:
        """The next batch; None after the last one."""
        return self._core.next_batch()

    def reset(self) -> None:
        """Back to the first batch."""
        self._core.reset()

    def save_calibration_data(self, path: Path | str) -> None:
        """Every batch concatenated along axis 0, as one .npy (written atomically); leaves the
        batcher reset."""
        self._core.save_calibration_data(str(path))

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[np.ndarray]:
        """Every batch from the first (the batcher is reset first and after)."""
        self._core.reset()
        while (batch := self._core.next_batch()) is not None:
            yield batch
        self._core.reset()
