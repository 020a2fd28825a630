"""TRTEngine, benchmark_engine, inspect_engine, ImageBatcher and FLAGS against the library's
own descriptions (the CLI's inspect --json, generate_calibration)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import trtutils
from trtutils.builder import ImageBatcher, build_engine, can_run_on_dla


@pytest.fixture()
def engine_path(workdir: Path) -> Path:
    build_engine("model.onnx", "model.engine", optimization_level=1)
    return workdir / "model.engine"


def test_io_description(engine_path: Path) -> None:
    engine = trtutils.TRTEngine(engine_path)
    assert engine.input_names == ["input"]
    assert engine.input_shapes == [(1, 3, 224, 224)]
    assert engine.input_dtypes == [np.dtype(np.float32)]
    assert engine.output_names == ["output"]
    assert engine.output_shapes == [(1, 10)]
    assert engine.output_dtypes == [np.dtype(np.float32)]
    assert engine.input_spec == [([1, 3, 224, 224], np.dtype(np.float32))]
    assert engine.runtime_backend == "cpu"


def test_execute_zero_copy_and_inputs_untouched(engine_path: Path) -> None:
    engine = trtutils.TRTEngine(engine_path)
    x = np.load("input.npy")
    before = x.copy()
    (out,) = engine.execute([x])
    assert np.array_equal(x, before)
    assert not out.flags.owndata  # a view of the engine's result buffer
    # Strided and Fortran-order inputs are copied, with the same result.
    (again,) = engine.execute([np.asfortranarray(x)])
    assert again.tobytes() == out.tobytes()
    (by_name,) = engine.execute({"input": x})
    assert by_name.tobytes() == out.tobytes()
    (single,) = engine(x)  # one array for a one-input engine
    assert single.tobytes() == out.tobytes()


def test_execute_errors(engine_path: Path) -> None:
    engine = trtutils.TRTEngine(engine_path)
    with pytest.raises(ValueError, match="1 input"):
        engine.execute([])
    with pytest.raises(trtutils.InvalidArgumentError, match="input"):
        engine.execute([np.zeros((1, 3, 224, 224), np.float64)])
    with pytest.raises(trtutils.InvalidArgumentError, match="input"):
        engine.execute([np.zeros((1, 3, 100, 224), np.float32)])
    with pytest.raises(TypeError):
        engine.execute([np.zeros((1, 3, 224, 224), np.complex64)])


def test_random_input_benchmark_and_mock(engine_path: Path) -> None:
    engine = trtutils.TRTEngine(engine_path, warmup=True, warmup_iterations=1)
    data = engine.get_random_input()
    assert data[0].shape == (1, 3, 224, 224) and data[0].dtype == np.float32
    assert engine.get_random_input() is data
    assert engine.mock_execute()[0].shape == (1, 10)
    result = trtutils.benchmark_engine(engine, iterations=3, warmup_iterations=1)
    assert len(result.latency.raw) == 3 and 0 < result.latency.min <= result.latency.max


def test_inspect_matches_cli(engine_path: Path, cli) -> None:
    ours = trtutils.inspect_engine(engine_path)
    r = cli("inspect", "--engine", engine_path, "--json")
    assert r.returncode == 0, r.stderr
    assert ours == json.loads(r.stdout)  # the same content, the path included
    assert ours["trtutils_version"] == trtutils.__version__
    assert ours["engine_format_version"] == 2
    assert ours["engine_producer"] == f"trtutils {trtutils.__version__}"
    assert trtutils.inspect_engine(trtutils.TRTEngine(engine_path)) == ours


def test_image_batcher_iteration(workdir: Path, cli) -> None:
    batcher = ImageBatcher("calibration_images", (64, 48, 3), "uint8", batch_size=4,
                           order="NHWC", max_images=10)  # fmt: skip
    assert len(batcher) == 2 and batcher.batch_shape == (4, 64, 48, 3)
    batches = list(batcher)
    assert [b.shape for b in batches] == [(4, 64, 48, 3)] * 2 and batches[0].dtype == np.uint8
    assert batcher.get_next_batch() is not None  # iteration left it reset
    batcher.save_calibration_data("b.npy")
    r = cli("generate_calibration", "--calibration_dir", "calibration_images", "--input_shape",
            64, 48, 3, "--input_dtype", "uint8", "--batch_size", 4, "--data_order", "NHWC",
            "--max_images", 10, "--output", "c.npy")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load("b.npy"), np.concatenate(batches))
    assert Path("b.npy").read_bytes() == Path("c.npy").read_bytes()


def test_can_run_on_dla_chunks(workdir: Path) -> None:
    full, chunks = can_run_on_dla("model.onnx")
    assert isinstance(full, bool) and chunks
    assert chunks[0][1] == 0
    for (names, start, end, _), nxt in zip(chunks, chunks[1:] + [None]):
        assert len(names) == end - start + 1
        if nxt is not None:
            assert nxt[1] == end + 1


def test_flags() -> None:
    assert trtutils.FLAGS.STRONGLY_TYPED_SUPPORTED is True
    assert trtutils.FLAGS.IS_BLACKWELL == trtutils.platform_info().is_blackwell


def test_gil_released_while_building_and_running(workdir: Path) -> None:
    """Another Python thread runs while the library builds and executes."""
    import threading

    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        before = ticks
        build_engine("model.onnx", "gil.engine", optimization_level=1)
        during_build = ticks - before
        engine = trtutils.TRTEngine("gil.engine")
        x = engine.get_random_input()
        before = ticks
        # At least 0.5 s of executions: one of a few milliseconds can end before the other
        # thread is scheduled at all on a loaded machine (seen in CI: 0 ticks over 5 runs).
        import time
        t_end = time.monotonic() + 0.5
        while time.monotonic() < t_end or ticks == before:
            engine.execute(x)
            if time.monotonic() > t_end + 5.0:
                break
        during_run = ticks - before
    finally:
        stop.set()
        thread.join()
    assert during_build > 0 and during_run > 0
