"""`python -m trtutils` is the C++ CLI in-process: the seed's CLI steps give the executable's
files, its messages and exit codes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

import trtutils


def test_version_and_help_match(cli, cli_path, python_cli) -> None:
    for args in (["--version"], ["build", "--help"], ["build_dla", "--help"]):
        ours, theirs = python_cli(*args), cli(*args)
        assert ours.returncode == theirs.returncode == 0
        # Usage lines name the program as it was started.
        assert ours.stdout.replace("python -m trtutils", str(cli_path)) == theirs.stdout


def test_seed_cli_steps(workdir: Path, cli, python_cli, cli_outputs) -> None:
    """The seed's three CLI steps through `python -m trtutils`, each file equal to the
    executable's, byte for byte; the engine's outputs too."""
    steps = [
        ["generate_calibration", "--calibration_dir", "calibration_images/", "--input_shape",
         "224", "224", "3", "--input_dtype", "float32", "--batch_size", "8", "--data_order",
         "NCHW", "--output", "{}calib.npy"],
        ["quantize", "--onnx", "model.onnx", "--output", "{}model_qdq.onnx",
         "--calibration_data", "{}calib.npy", "--quantize_mode", "int8",
         "--calibration_method", "max"],
        # (an engine records its model's path: both build the same file)
        ["build", "--onnx", "model_qdq.onnx", "--output", "{}model.engine", "--strongly_typed",
         "--timing_cache", "timing.cache"],
    ]  # fmt: skip
    for step in steps:
        if step[0] == "build":
            shutil.copy("py_model_qdq.onnx", "model_qdq.onnx")
        ours = python_cli(*[a.format("py_") for a in step])
        assert ours.returncode == 0, ours.stderr
        theirs = cli(*[a.format("cpp_") for a in step])
        assert theirs.returncode == 0, theirs.stderr
        # The same report, but for the times it measured.
        strip = lambda text: re.sub(r"[0-9.]+ (s|ms|images/s)\b", "T", text)  # noqa: E731
        assert strip(ours.stdout.replace("py_", "cpp_")) == strip(theirs.stdout)
    for name in ("calib.npy", "model_qdq.onnx"):
        assert Path("py_" + name).read_bytes() == Path("cpp_" + name).read_bytes(), name
    # The first build timed the tactics into timing.cache, the second took them from it (an
    # engine records which): rebuilt from the warm cache, the first is the second's bytes.
    assert python_cli(*[a.format("py_") for a in steps[2]]).returncode == 0
    py_engine, cpp_engine = Path("py_model.engine"), Path("cpp_model.engine")
    assert py_engine.read_bytes() == cpp_engine.read_bytes()
    x = np.load("input.npy")
    ours = trtutils.TRTEngine(py_engine).execute([x])
    theirs = cli_outputs(cpp_engine, "input.npy")
    assert [o.tobytes() for o in ours] == [t.tobytes() for t in theirs.values()]


def test_errors_and_exit_codes_match(workdir: Path, cli, python_cli) -> None:
    for args in (
        ["build", "--onnx", "model.onnx", "--output", "e.engine", "--strongly_typed", "--fp16"],
        ["build", "--onnx", "absent.onnx", "--output", "e.engine"],
        ["build", "--onnx", "model.onnx"],
        ["no_such_command"],
    ):
        ours, theirs = python_cli(*args), cli(*args)
        assert ours.returncode == theirs.returncode != 0
        assert ours.stderr == theirs.stderr
    assert python_cli("build", "--onnx", "model.onnx", "--output", "e.engine", "--strongly_typed",
                      "--fp16").returncode == 2  # fmt: skip


def test_run_cli_in_process(workdir: Path, capfd) -> None:
    assert trtutils.run_cli(["--version"]) == 0
    assert "trtutils" in capfd.readouterr().out
