"""Log lines and progress reach Python's sys.stderr (a notebook cell, a redirection), not only
file descriptor 2: the library's console sink (trtutils/console.h, python/src/console.cpp)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import trtutils
from trtutils.builder import ImageBatcher, build_engine


def test_warnings_go_to_sys_stderr(workdir: Path) -> None:
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured):
        # int8 without calibration (allowed to stay float): warns
        build_engine("model.onnx", "float.engine", int8=True, allow_float_fallback=True)
    text = captured.getvalue()
    assert "[trtutils] [warning]" in text, text
    assert Path("float.engine").is_file()


def test_progress_lines_go_to_sys_stderr(workdir: Path) -> None:
    captured = io.StringIO()  # not a terminal: a plain line at every 10%
    with contextlib.redirect_stderr(captured):
        ImageBatcher("calibration_images", (32, 32, 3), "float32", batch_size=8,
                     verbose=True).save_calibration_data("c.npy")  # fmt: skip
    lines = [l for l in captured.getvalue().splitlines() if "calibration data:" in l]
    assert lines and lines[-1].startswith("[trtutils] calibration data: 16/16 images (100%)"), lines


def test_terminal_redraws_in_place(workdir: Path) -> None:
    captured = io.StringIO()
    trtutils._trtutils._console_to_python(True)  # as in a terminal or a Jupyter cell
    try:
        with contextlib.redirect_stderr(captured):
            ImageBatcher("calibration_images", (32, 32, 3), "float32", batch_size=8,
                         verbose=True).save_calibration_data("c.npy")  # fmt: skip
    finally:
        trtutils._trtutils._console_to_python(trtutils._console_is_terminal())
    text = captured.getvalue()
    assert "\rcalibration data [" in text and text.endswith("\n"), repr(text[-200:])
