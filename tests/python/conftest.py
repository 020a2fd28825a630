"""Fixtures of the Python package's suite: the C++ CLI (the oracle every result is compared
with), a small 224 x 224 CNN, calibration images, and a Q/DQ model made once per session.

Run by ctest (test `python_api`, PYTHONPATH and TRTUTILS_CLI set), or by hand after a build:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
IMAGES = ROOT / "tests" / "data" / "images"
# Ten decodable photos and fixtures of different formats and sizes (16 images: two batches of 8).
CALIBRATION_IMAGES = [
    "photo_astronaut.png", "photo_chelsea.png", "photo_coffee.png", "photo_hubble.jpg",
    "progressive.jpg", "rgb24.bmp", "rgba.png", "lossy.webp", "lossless.webp", "gray.jpg",
    "cmyk.jpg", "pal8.bmp", "orient_1.jpg", "orient_6.jpg", "gray.png", "rgb32.bmp",
]  # fmt: skip


@pytest.fixture(scope="session")
def cli_path() -> Path:
    path = Path(os.environ.get("TRTUTILS_CLI", ROOT / "build" / "bin" / "trtutils"))
    if not path.is_file():
        pytest.fail(f"the trtutils CLI is not at {path} (build it, or set TRTUTILS_CLI)")
    return path


@pytest.fixture(scope="session")
def cli(cli_path: Path):
    """cli(*args, cwd=None) -> CompletedProcess of the C++ executable (text, not checked)."""

    def run(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(cli_path), *map(str, args)], cwd=cwd, capture_output=True,
                              text=True, check=False)  # fmt: skip

    return run


@pytest.fixture(scope="session")
def python_cli():
    """python_cli(*args, cwd=None) -> CompletedProcess of `python -m trtutils ARGS`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def run(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "trtutils", *map(str, args)], cwd=cwd,
                              env=env, capture_output=True, text=True, check=False)  # fmt: skip

    return run


@pytest.fixture(scope="session")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """model.onnx (made by make_model.py in a subprocess) and calibration_images/."""
    d = tmp_path_factory.mktemp("assets")
    subprocess.run([sys.executable, str(HERE / "make_model.py"), str(d / "model.onnx")],
                   check=True, capture_output=True)  # fmt: skip
    images = d / "calibration_images"
    images.mkdir()
    for name in CALIBRATION_IMAGES:
        shutil.copy(IMAGES / name, images / name)
    np.save(d / "input.npy", np.random.default_rng(7).random((1, 3, 224, 224), dtype=np.float32))
    return d


@pytest.fixture(scope="session")
def qdq_model(assets: Path, cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """model_qdq.onnx: int8 max-calibrated from the calibration images, through the CLI."""
    d = tmp_path_factory.mktemp("qdq")
    for args in (
        ["generate_calibration", "--calibration_dir", assets / "calibration_images",
         "--input_shape", 224, 224, 3, "--input_dtype", "float32", "--batch_size", 8,
         "--output", d / "calib.npy"],
        ["quantize", "--onnx", assets / "model.onnx", "--output", d / "model_qdq.onnx",
         "--calibration_data", d / "calib.npy", "--quantize_mode", "int8",
         "--calibration_method", "max"],
    ):  # fmt: skip
        r = cli(*args)
        assert r.returncode == 0, r.stderr
    return d / "model_qdq.onnx"


@pytest.fixture()
def workdir(tmp_path: Path, assets: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh current directory holding model.onnx, input.npy and calibration_images/: the
    seed's relative paths work there unchanged."""
    shutil.copy(assets / "model.onnx", tmp_path / "model.onnx")
    shutil.copy(assets / "input.npy", tmp_path / "input.npy")
    shutil.copytree(assets / "calibration_images", tmp_path / "calibration_images")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture()
def cli_outputs(cli, tmp_path: Path):
    """cli_outputs(engine, input.npy) -> {output name: array} from `trtutils run --engine`."""

    def run(engine: Path | str, inputs: Path | str) -> dict[str, np.ndarray]:
        out = tmp_path / f"cli_out_{Path(engine).stem}"
        r = cli("run", "--engine", engine, "--input", inputs, "--output_dir", out)
        assert r.returncode == 0, r.stderr
        return {p.stem: np.load(p) for p in sorted(out.glob("*.npy"))}

    return run


def assert_same_outputs(engine_path: Path | str, inputs: Path | str, cli_outputs) -> None:
    """TRTEngine(engine).execute on the input equals the C++ CLI's run, bit for bit."""
    import trtutils

    engine = trtutils.TRTEngine(engine_path)
    ours = engine.execute([np.load(inputs)])
    theirs = cli_outputs(engine_path, inputs)
    assert list(theirs) == sorted(engine.output_names)
    for name, array in zip(engine.output_names, ours):
        assert array.dtype == theirs[name].dtype
        assert array.shape == theirs[name].shape
        assert array.tobytes() == theirs[name].tobytes(), name
