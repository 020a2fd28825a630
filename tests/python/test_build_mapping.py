"""build_engine's keyword arguments are the CLI's build flags: the same configuration gives the
same engine file, byte for byte (builds are deterministic; workspace is GiB here, as in the
original, and MiB on the command line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trtutils.builder import ImageBatcher, build_engine

CASES = {
    "default": ({}, []),
    "fp16": ({"fp16": True, "optimization_level": 1}, ["--fp16", "--optimization_level", "1"]),
    "int8_npy": (
        {"int8": True, "calibration_data": "calib.npy", "calibration_cache": "m.cache"},
        ["--int8", "--calibration_data", "calib.npy", "--calibration_cache", "m.cache"],
    ),
    "int8_batcher": (
        {"int8": True, "data_batcher": "batcher", "calibration_cache": "m.cache"},
        ["--int8", "--calibration_dir", "calibration_images", "--input_shape", "224", "224", "3",
         "--batch_size", "1", "--calibration_cache", "m.cache"],
    ),  # fmt: skip
    "layer_precision": (
        {"fp16": True, "layer_precision": [(0, "float32"), (1, None)],
         "precision_constraints": "obey", "workspace": None},
        ["--fp16", "--layer_precision", "0:fp32", "--precision_constraints", "obey"],
    ),  # fmt: skip
    "gpu_switches": (
        {"backend": "cuda", "target_sm": 90, "gpu_switches": {"ATTENTION": 0}},
        ["--backend", "cuda", "--target_sm", "90", "--gpu_switch", "ATTENTION=0"],
    ),
    "formats_shapes": (
        {"input_tensor_formats": ["fp16:LINEAR"], "shapes": [("input", (1, 3, 224, 224))],
         "fp16": True},
        ["--input_tensor_formats", "fp16:LINEAR", "--shape", "input:1,3,224,224", "--fp16"],
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_engine_as_cli(case: str, workdir: Path, cli) -> None:
    kwargs, flags = CASES[case]
    if any("calib" in k or k == "data_batcher" for k in kwargs):
        ImageBatcher("calibration_images", (224, 224, 3), "float32").save_calibration_data(
            "calib.npy")  # fmt: skip
    if kwargs.get("data_batcher") == "batcher":
        kwargs = dict(kwargs, data_batcher=ImageBatcher("calibration_images", (224, 224, 3),
                                                        "float32", batch_size=1))  # fmt: skip
    if kwargs.get("workspace", 4.0):
        flags = [*flags, "--workspace", "4096"]
    # Tactics are timed (optimization_level >= 3), and an engine records how many were: a first
    # build fills a timing cache, from which both builds then take the same kernels.
    for output in ("warm.engine", "cli.engine"):
        Path("m.cache").unlink(missing_ok=True)
        r = cli("build", "--onnx", "model.onnx", "--output", output, "--timing_cache", "t.cache",
                *flags)  # fmt: skip
        assert r.returncode == 0, r.stderr
    Path("m.cache").unlink(missing_ok=True)
    build_engine("model.onnx", "py.engine", timing_cache="t.cache", **kwargs)
    assert Path("py.engine").read_bytes() == Path("cli.engine").read_bytes()
