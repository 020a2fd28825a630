"""The seed's three Python code blocks (shared/seed/strongly-typed-networks-and-quantization.txt),
copied verbatim: the paths are the seed's own, relative to a work directory that holds the
suite's model.onnx and calibration_images/. Each engine runs in TRTEngine and gives the C++
CLI's `run --engine` output bit for bit."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import trtutils
from conftest import assert_same_outputs


def test_seed_quantize_then_build(workdir: Path, cli, cli_outputs) -> None:
    # ---- the seed's "Python API" block, verbatim ----
    from trtutils.builder import quantize, build_engine, ImageBatcher

    # 1. Produce calibration data (.npy) from an image directory.
    batcher = ImageBatcher(
        image_dir="calibration_images/",
        shape=(224, 224, 3),   # HWC
        dtype="float32",
        batch_size=8,
        order="NCHW",
    )
    batcher.save_calibration_data("calib.npy")

    # 2. Quantize the ONNX, baking Q/DQ nodes into a new file.
    quantize.quantize_onnx(
        onnx_path="model.onnx",
        output_path="model_qdq.onnx",
        calibration_data="calib.npy",
        quantize_mode="int8",          # "int4" | "int8" | "fp8"
        calibration_method="max",      # "max" | "entropy" | "percentile" | "mse"
    )

    # 3. Build a strongly-typed engine from the Q/DQ ONNX.
    build_engine(
        "model_qdq.onnx",
        "model.engine",
        strongly_typed=True,
    )
    # ---- end of the seed's block ----

    assert np.load("calib.npy").shape == (16, 3, 224, 224)
    engine = trtutils.TRTEngine("model.engine")
    assert engine.strongly_typed
    assert any(l.precision == "int8" for l in engine.engine.layers)
    assert_same_outputs("model.engine", "input.npy", cli_outputs)

    # The seed's CLI steps on the same inputs write the same files.
    r = cli("generate_calibration", "--calibration_dir", "calibration_images/", "--input_shape",
            224, 224, 3, "--input_dtype", "float32", "--batch_size", 8, "--data_order", "NCHW",
            "--output", "cli_calib.npy")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert Path("cli_calib.npy").read_bytes() == Path("calib.npy").read_bytes()
    r = cli("quantize", "--onnx", "model.onnx", "--output", "cli_qdq.onnx", "--calibration_data",
            "calib.npy", "--quantize_mode", "int8", "--calibration_method", "max")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert Path("cli_qdq.onnx").read_bytes() == Path("model_qdq.onnx").read_bytes()


def test_seed_strongly_typed_build(workdir: Path, qdq_model: Path, cli_outputs) -> None:
    shutil.copy(qdq_model, "model_qdq.onnx")
    # ---- the seed's "When to use strongly_typed=True" block, verbatim ----
    from trtutils.builder import build_engine

    build_engine(
        "model_qdq.onnx",      # pre-quantized with Q/DQ nodes
        "model.engine",
        strongly_typed=True,    # precision comes from the ONNX graph
    )
    # ---- end of the seed's block ----
    assert trtutils.TRTEngine("model.engine").strongly_typed
    assert_same_outputs("model.engine", "input.npy", cli_outputs)


@pytest.fixture()
def orin_target():
    """This host has no Orin: builds without a target_sm target SM 87 (DLA layers emulated)."""
    from trtutils import builder

    before = builder.target_sm()
    builder.set_target_sm(87)
    yield
    builder.set_target_sm(before)


def test_seed_dla_strongly_typed(workdir: Path, qdq_model: Path, orin_target, cli_outputs) -> None:
    shutil.copy(qdq_model, "model_qdq.onnx")
    # ---- the seed's "DLA + strongly-typed" block, verbatim ----
    from trtutils.builder import build_dla_engine

    build_dla_engine(
        "model_qdq.onnx",
        "model_dla.engine",
        dla_core=0,
        strongly_typed=True,
    )
    # ---- end of the seed's block ----
    engine = trtutils.TRTEngine("model_dla.engine")
    assert engine.strongly_typed
    assert trtutils.inspect_engine(engine)["build"]["dla"]["core"] == 0
    assert_same_outputs("model_dla.engine", "input.npy", cli_outputs)


def test_seed_dla_block_without_orin_says_why(workdir: Path, qdq_model: Path) -> None:
    """Without a target (no GPU here, none set), the same call is refused with the library's
    reason, as the CLI's build_dla is."""
    from trtutils.builder import build_dla_engine

    shutil.copy(qdq_model, "model_qdq.onnx")
    if trtutils.platform_info().gpu_count:
        pytest.skip("this host has a GPU: the target is its SM")
    with pytest.raises(ValueError, match="pass target_sm=87"):
        build_dla_engine("model_qdq.onnx", "model_dla.engine", dla_core=0, strongly_typed=True)
    assert not Path("model_dla.engine").exists()
