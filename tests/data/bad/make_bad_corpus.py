#!/usr/bin/python3
"""Writes the bad-input corpus of tests/data/bad (see MANIFEST.tsv, tests/cli/bad_corpus_test.cpp).

Run with Debian's python (onnx, numpy, PIL):
    /usr/bin/python3 tests/data/bad/make_bad_corpus.py [--cli build-x/bin/trtutils]
Every file is small (< 64 KiB) and, but for the engines, the same on every run. The engine files
need the CLI (a tiny engine is built, then damaged; its metadata names the build machine); without
--cli the committed ones are kept. The fuzz regression inputs (cli_fuzz_*, onnx_fuzz_*) are not
written here: the fuzzers found them. A new file needs a line in MANIFEST.tsv.
"""

import argparse
import io
import os
import struct
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 64 << 10


def write(name, data):
    assert len(data) < MAX_BYTES, (name, len(data))
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def model(nodes, inputs, outputs, initializers=(), opset=17):
    g = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="bad")
    m.ir_version = 8
    return m


def fvi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def small_model():
    """x[1,2,4,4] -> Conv(3x3, pad 1) -> Relu -> y: a valid model, the base of the damaged ones."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((2, 2, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(2, np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    return model(nodes, [fvi("x", [1, 2, 4, 4])], [fvi("y", [1, 2, 4, 4])], [w, b])


def identity_with_initializer(init):
    """y = x + init, for initializers that are themselves the bad part."""
    return model([helper.make_node("Add", ["x", init.name], ["y"], name="add")],
                 [fvi("x", [4])], [fvi("y", [4])], [init])


def external_initializer(location):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    return identity_with_initializer(t)


def onnx_files():
    good = small_model().SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(good))
    write("onnx_zero_bytes.onnx", b"")
    # Cut inside the weights: protobuf sees a field running past the end.
    write("onnx_truncated.onnx", good[: len(good) * 2 // 3])
    # One bit of the graph field's length prefix (tag 0x3a = field 7, length-delimited): the graph
    # then claims more bytes than the file has.
    flipped = bytearray(good)
    pos = flipped.index(b"\x3a") + 1
    assert pos == 8, pos  # after ir_version (08 08) and producer_name (12 03 "bad")
    flipped[pos + 1 if flipped[pos] & 0x80 else pos] ^= 0x40
    try:
        onnx.load_from_string(bytes(flipped))
    except Exception:  # protobuf's DecodeError
        pass
    else:
        raise AssertionError("onnx_bitflip_length.onnx still parses")
    write("onnx_bitflip_length.onnx", bytes(flipped))
    # One bit of an op_type: "Relu" -> "Rdlu" (0x65 ^ 0x01 = 0x64), still valid protobuf.
    flipped = bytearray(good)
    pos = flipped.index(b"Relu")
    flipped[pos + 1] ^= 0x01
    write("onnx_bitflip_op_type.onnx", bytes(flipped))

    # An initializer whose dims need exabytes (raw_data holds 16 bytes).
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 31, 1 << 31, 1 << 31])
    t.raw_data = b"\0" * 16
    write("onnx_oversized_dims_initializer.onnx", identity_with_initializer(t).SerializeToString())
    # A graph input of 2^31 x 2^31 floats: random input data for it cannot be made.
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
              [fvi("x", [1 << 31, 1 << 31])], [fvi("y", [1 << 31, 1 << 31])])
    write("onnx_oversized_dims_input.onnx", m.SerializeToString())
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-1, 4])
    write("onnx_negative_dims_initializer.onnx", identity_with_initializer(t).SerializeToString())
    # Reshape to (-2, 2): -1 is the only negative value Reshape allows.
    shape = numpy_helper.from_array(np.array([-2, 2], np.int64), "shape")
    m = model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
              [fvi("x", [4])], [fvi("y", None)], [shape])
    write("onnx_negative_dims_reshape.onnx", m.SerializeToString())

    # Wrong dtypes: raw_data of 12 bytes for 4 floats; complex64; an input of elem_type 99;
    # MatMul of float and int64.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.raw_data = b"\0" * 12
    write("onnx_raw_data_size_mismatch.onnx", identity_with_initializer(t).SerializeToString())
    t = TensorProto(name="w", data_type=TensorProto.COMPLEX64, dims=[4])
    t.raw_data = b"\0" * 32
    write("onnx_unsupported_dtype.onnx", identity_with_initializer(t).SerializeToString())
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [fvi("x", [4], 99)],
              [fvi("y", [4])])
    write("onnx_input_unknown_dtype.onnx", m.SerializeToString())
    w = numpy_helper.from_array(np.ones((4, 2), np.int64), "w")
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], [fvi("x", [3, 4])],
              [fvi("y", [3, 2])], [w])
    write("onnx_matmul_dtype_mismatch.onnx", m.SerializeToString())

    # Mismatched shapes: Add of an input [2, 3] and a weight [4, 5] (not broadcastable).
    b = numpy_helper.from_array(np.ones((4, 5), np.float32), "b")
    m = model([helper.make_node("Add", ["a", "b"], ["y"], name="add")], [fvi("a", [2, 3])],
              [fvi("y", None)], [b])
    write("onnx_add_incompatible_shapes.onnx", m.SerializeToString())

    # Invalid graphs `build` must refuse (it wrote engines that `run` then rejected): a graph
    # output no node computes, no outputs at all, IR version 0, a constant Gather index past the
    # axis, an If without its else branch.
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [fvi("x", [4])],
              [fvi("y", [4]), fvi("ghost", [4])])
    write("onnx_output_not_computed.onnx", m.SerializeToString())
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [fvi("x", [4])], [])
    write("onnx_no_outputs.onnx", m.SerializeToString())
    m = small_model()
    m.ir_version = 0
    write("onnx_ir_version_zero.onnx", m.SerializeToString())
    idx = numpy_helper.from_array(np.array([0, 7], np.int64), "idx")
    m = model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=1)],
              [fvi("x", [2, 4])], [fvi("y", [2, 2])], [idx])
    write("onnx_gather_index_out_of_range.onnx", m.SerializeToString())
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="t_relu")], "then",
                               [], [fvi("t", [4])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    m = model([helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g)],
              [fvi("x", [4])], [fvi("y", [4])], [cond])
    write("onnx_if_without_else_branch.onnx", m.SerializeToString())
    # A Pad whose output is 2^30 floats (4 GiB) from a 4-element input: --max_memory must refuse
    # it before anything of that size is allocated.
    pads = numpy_helper.from_array(np.array([0, (1 << 30) - 4], np.int64), "pads")
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], [fvi("x", [4])],
              [fvi("y", None)], [pads])
    write("onnx_pad_huge_output.onnx", m.SerializeToString())
    # A tensor name holding a newline and an "error:" of its own (a forged second error line), a
    # node name holding a NUL (it once cut the message short).
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu"),
               helper.make_node("Nope", ["y"], ["z\nerror: forged"], name="bad\nop\0cut")],
              [fvi("x", [4])], [fvi("z\nerror: forged", [4])])
    write("onnx_newline_in_names.onnx", m.SerializeToString())

    # External data outside the model folder.
    write("onnx_external_data_parent_dir.onnx",
          external_initializer("../weights.bin").SerializeToString())
    write("onnx_external_data_absolute.onnx",
          external_initializer("/etc/passwd").SerializeToString())


def npy_bytes(header, data=b"", version=1):
    """A .npy with `header` padded as numpy pads it (data 64-byte aligned)."""
    prefix = 10 if version == 1 else 12
    header = header + " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    n = len(header)
    size = struct.pack("<H", n) if version == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode("latin-1") + data


def npy_of(array):
    f = io.BytesIO()
    np.save(f, array)
    return f.getvalue()


def npy_files():
    # All for examples/tiny_cnn.onnx (input 'input': float32 [batch, 3, 32, 32]).
    good = npy_of(np.zeros((1, 3, 32, 32), np.float32))
    write("npy_truncated.npy", good[: len(good) // 3])
    write("npy_bad_magic.npy", b"\x93NUMPZ" + good[6:1024])
    # Header without its closing brace (and numpy's newline inside): the message must stay one line.
    write("npy_bad_header.npy",
          npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32),\n\x01"))
    write("npy_negative_shape.npy",
          npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3, 32, 32), }"))
    write("npy_huge_shape.npy",
          npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, "
                    "1099511627776, 3), }"))
    # Header length 0xffff in a file of a few bytes.
    write("npy_header_length_past_end.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    write("npy_unsupported_dtype.npy", npy_of(np.zeros((1, 3, 2, 2), np.complex64)))
    write("npy_wrong_shape_for_input.npy", npy_of(np.zeros((1, 3, 16, 16), np.float32)))
    # A dimension past int64 (the reader once said "internal error: stoll").
    write("npy_dim_past_int64.npy",
          npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3, "
                    "32, 32), }"))
    # Calibration data: a negative dim (quantize's own reader took it), all NaN.
    write("calib_negative_shape.npy",
          npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4, 3, 32, 32), }"))
    write("calib_all_nan.npy", npy_of(np.full((2, 3, 32, 32), np.nan, np.float32)))
    # Calibration data that does not fit the model input: wrong spatial size, wrong dtype.
    write("calib_wrong_shape.npy", npy_of(np.zeros((4, 3, 8, 8), np.float32)))
    write("calib_wrong_dtype.npy", npy_of(np.zeros((2, 3, 32, 32), np.int16)))


def cache_files():
    head = "TRT-8601-EntropyCalibration2\n"
    write("calib_cache_nan_scale.cache", (head + "input: 7fc00000\n").encode())
    write("calib_cache_inf_scale.cache", (head + "input: 7f800000\n").encode())
    write("calib_cache_garbage_hex.cache", (head + "input: 3c01zz14\n").encode())
    write("calib_cache_not_a_cache.cache", bytes(range(256)))
    # 3 hex digits: once read as a denormal scale although the message asks for 8.
    write("calib_cache_short_hex.cache", (head + "input: 3c0\n").encode())


def image_files():
    write("image_zero_bytes.jpg", b"")
    rng = np.random.default_rng(1)
    pixels = Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
    f = io.BytesIO()
    pixels.save(f, "JPEG", quality=90)
    jpg = f.getvalue()
    write("image_truncated.jpg", jpg[: len(jpg) // 2])
    f = io.BytesIO()
    pixels.save(f, "PNG")
    png = f.getvalue()
    write("image_truncated.png", png[: len(png) // 2])
    # A JPEG signature and nothing decodable after it.
    write("image_garbage_after_signature.jpg", b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4)


def engine_files(cli):
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = os.path.join(tmp, "small.onnx")
        engine_path = os.path.join(tmp, "small.engine")
        with open(onnx_path, "wb") as f:
            f.write(small_model().SerializeToString())
        subprocess.run([cli, "-q", "build", "--onnx", onnx_path, "--output", engine_path,
                        "--backend", "cpu"], check=True)
        with open(engine_path, "rb") as f:
            engine = f.read()
    write("engine_truncated.engine", engine[: len(engine) // 2])
    flipped = bytearray(engine)
    flipped[len(engine) * 3 // 4] ^= 0x10  # past the header: only the checksum notices
    write("engine_bitflip.engine", bytes(flipped))
    write("engine_zero_bytes.engine", b"")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cli", help="the trtutils binary, to build the engine the .engine files damage")
    args = ap.parse_args()
    onnx_files()
    npy_files()
    cache_files()
    image_files()
    if args.cli:
        engine_files(args.cli)
    else:
        print("no --cli: engine_*.engine left as they are")


if __name__ == "__main__":
    main()
