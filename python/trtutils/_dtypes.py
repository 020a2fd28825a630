"""Conversions of the dtype spellings users pass (str, numpy dtypes, TensorRT-style enums)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _trtutils

# TensorRT's trt.DataType member names, for callers that pass those (or look-alikes).
_TRT_NAMES = {
    "FLOAT": "float32",
    "HALF": "float16",
    "BF16": "bfloat16",
    "INT8": "int8",
    "UINT8": "uint8",
    "INT32": "int32",
    "INT64": "int64",
    "BOOL": "bool",
    "FP8": "float8e4m3fn",
    "INT4": "int4",
}


def to_data_type(value: Any) -> _trtutils.DataType:
    """'float16', 'fp16', np.float16, np.dtype('f2'), DataType, trt.DataType.HALF -> DataType."""
    if isinstance(value, _trtutils.DataType):
        return value
    if isinstance(value, str):
        return _trtutils.dtype_from_name(_TRT_NAMES.get(value, value))
    name = getattr(value, "name", None)
    if isinstance(name, str) and name in _TRT_NAMES:
        return _trtutils.dtype_from_name(_TRT_NAMES[name])
    try:
        return _trtutils.dtype_from_name(np.dtype(value).name)
    except TypeError as e:
        raise TypeError(f"not a dtype: {value!r}") from e


def to_numpy_dtype(value: _trtutils.DataType) -> np.dtype:
    """The numpy dtype arrays of this DataType have in Python."""
    return np.dtype(_trtutils.numpy_dtype(value))
