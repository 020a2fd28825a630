"""Every ValueError of the seed, with the seed's text and the C++ CLI's (the CLI prints
"error: <the same text>" and exits with 2), nothing written; other errors map to Python's."""

from __future__ import annotations

from pathlib import Path

import pytest

import trtutils
from trtutils.builder import ImageBatcher, build_dla_engine, build_engine

PRECISION = (
    "strongly_typed=True derives precision from the ONNX graph; remove fp16/int8/fp8 builder flags."
)
CALIBRATION = "strongly_typed=True does not support runtime calibration"
LAYER_PRECISION = "strongly_typed=True and layer_precision are mutually exclusive"
BLACKWELL = "INT8+FP8 mixed precision on Blackwell requires strongly_typed=True"
DLA_ARTEFACT = "build_dla_engine(strongly_typed=True): {} is a weakly-typed artefact"


def batcher() -> ImageBatcher:
    return ImageBatcher("calibration_images", (224, 224, 3), "float32")


# (keyword arguments, the CLI's flags, the text the message starts with)
BUILD_CASES = [
    ({"fp16": True}, ["--fp16"], PRECISION),
    ({"int8": True}, ["--int8"], PRECISION),
    ({"fp8": True}, ["--fp8"], PRECISION),
    ({"int8": True, "fp8": True}, ["--int8", "--fp8"], PRECISION),
    ({"calibration_cache": "model.cache"}, ["--calibration_cache", "model.cache"], CALIBRATION),
    ({"data_batcher": "batcher"}, ["--calibration_dir", "calibration_images", "--input_shape",
                                   "224", "224", "3"], CALIBRATION),  # fmt: skip
    ({"layer_precision": [(0, "float16")]}, ["--layer_precision", "0:fp16"], LAYER_PRECISION),
]


@pytest.mark.parametrize(("kwargs", "flags", "text"), BUILD_CASES)
def test_strongly_typed_rejections(workdir: Path, cli, kwargs, flags, text) -> None:
    if kwargs.get("data_batcher") == "batcher":
        kwargs = dict(kwargs, data_batcher=batcher())
    with pytest.raises(ValueError) as info:
        build_engine("model.onnx", "model.engine", strongly_typed=True, **kwargs)
    assert type(info.value) is ValueError
    message = str(info.value)
    assert message.startswith(text)
    assert not Path("model.engine").exists()
    r = cli("build", "--onnx", "model.onnx", "--output", "model.engine", "--strongly_typed", *flags)
    assert r.returncode == 2
    assert r.stderr == f"error: {message}\n"
    assert not Path("model.engine").exists()


def test_seed_precision_text_exact(workdir: Path) -> None:
    with pytest.raises(ValueError, match=r"^" + PRECISION.replace(".", r"\.") + "$"):
        build_engine("model.onnx", "model.engine", strongly_typed=True, fp16=True)


def test_int8_without_calibration_needs_allow_float_fallback(workdir: Path, cli) -> None:
    with pytest.raises(ValueError) as info:
        build_engine("model.onnx", "model.engine", int8=True)
    assert str(info.value).startswith("int8 is enabled but neither calibration_cache nor")
    assert "allow_float_fallback=True" in str(info.value)
    assert not Path("model.engine").exists()
    r = cli("build", "--onnx", "model.onnx", "--output", "model.engine", "--int8")
    assert r.returncode == 2 and r.stderr == f"error: {info.value}\n"
    build_engine("model.onnx", "model.engine", int8=True, allow_float_fallback=True)
    assert Path("model.engine").exists()


def test_blackwell_int8_fp8_weakly_typed(workdir: Path, cli) -> None:
    with pytest.raises(ValueError) as info:
        build_engine("model.onnx", "model.engine", int8=True, fp8=True, target_sm=100)
    assert str(info.value).startswith(BLACKWELL)
    r = cli("build", "--onnx", "model.onnx", "--output", "model.engine", "--int8", "--fp8",
            "--target_sm", "100")  # fmt: skip
    assert r.returncode == 2 and r.stderr == f"error: {info.value}\n"
    assert not Path("model.engine").exists()


@pytest.mark.parametrize(
    ("kwargs", "flags", "what"),
    [
        ({"data_batcher": "batcher"}, ["--calibration_dir", "calibration_images", "--input_shape",
                                       "224", "224", "3"], "data_batcher"),  # fmt: skip
        ({"calibration_cache": "model.cache"}, ["--calibration_cache", "model.cache"],
         "calibration_cache"),  # fmt: skip
        ({"fp8": True}, ["--fp8"], "fp8"),
    ],
)
def test_dla_strongly_typed_rejections(workdir: Path, qdq_model: Path, cli, kwargs, flags, what) -> None:
    if kwargs.get("data_batcher") == "batcher":
        kwargs = dict(kwargs, data_batcher=batcher())
    with pytest.raises(ValueError) as info:
        build_dla_engine(qdq_model, "model_dla.engine", dla_core=0, strongly_typed=True,
                         target_sm=87, **kwargs)  # fmt: skip
    assert str(info.value).startswith(DLA_ARTEFACT.format(what))
    r = cli("build_dla", "--onnx", qdq_model, "--output", "model_dla.engine", "--dla_core", "0",
            "--strongly_typed", "--target_sm", "87", *flags)  # fmt: skip
    assert r.returncode == 2 and r.stderr == f"error: {info.value}\n"
    assert not Path("model_dla.engine").exists()


def test_missing_model_is_file_not_found(workdir: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        build_engine("absent.onnx", "model.engine", strongly_typed=True)
    assert isinstance(info.value, trtutils.TrtutilsError)
    assert "absent.onnx" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError):
        trtutils.TRTEngine("absent.engine")
    with pytest.raises(FileNotFoundError):
        from trtutils.builder import quantize

        quantize.quantize_onnx("model.onnx", "q.onnx", "absent.npy")


def test_invalid_arguments_are_value_errors(workdir: Path) -> None:
    from trtutils.builder import quantize

    with pytest.raises(ValueError, match="int3"):
        quantize.quantize_onnx("model.onnx", "q.onnx", None, quantize_mode="int3")
    with pytest.raises(trtutils.InvalidArgumentError, match="optimization_level"):
        build_engine("model.onnx", "model.engine", optimization_level=9)
    with pytest.raises(ValueError):
        ImageBatcher("calibration_images", (224, 224, 3), "float32", order="CHWN")


def test_not_an_engine(workdir: Path) -> None:
    with pytest.raises(trtutils.TrtutilsError) as info:
        trtutils.TRTEngine("model.onnx")
    assert "\n" not in str(info.value)
