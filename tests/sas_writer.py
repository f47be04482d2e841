"""Write a SAS .sas7bdat file for the tests, with ReadStat's own writer.

No Python library writes .sas7bdat, but ReadStat (the C library pyreadstat wraps, and
the one our ingest reads with) has a writer, and pyreadstat's extension exports it.
This calls it through ctypes: the file is made by a real writer, not copied from a
fixture. SAS variable names are ASCII (ReadStat refuses others, as SAS does without
VALIDVARNAME=ANY); string values may be any UTF-8 text.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import pandas as pd
import pyreadstat

_STRING, _DOUBLE = 0, 5  # readstat_type_t
_SINK = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def _library() -> ctypes.CDLL:
    (path,) = Path(pyreadstat.__file__).parent.glob("_readstat_writer*.so")
    lib = ctypes.CDLL(str(path))
    pointer, error = ctypes.c_void_p, ctypes.c_int
    signatures = {
        "readstat_writer_init": (pointer, []),
        "readstat_set_data_writer": (error, [pointer, _SINK]),
        "readstat_add_variable": (
            pointer,
            [pointer, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t],
        ),
        "readstat_begin_writing_sas7bdat": (error, [pointer, pointer, ctypes.c_long]),
        "readstat_begin_row": (error, [pointer]),
        "readstat_insert_double_value": (error, [pointer, pointer, ctypes.c_double]),
        "readstat_insert_string_value": (error, [pointer, pointer, ctypes.c_char_p]),
        "readstat_insert_missing_value": (error, [pointer, pointer]),
        "readstat_end_row": (error, [pointer]),
        "readstat_end_writing": (error, [pointer]),
        "readstat_writer_free": (None, [pointer]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def _check(code: int, step: str) -> None:
    if code != 0:
        raise RuntimeError(f"ReadStat refused {step}: error {code}")


def write_sas7bdat(df: pd.DataFrame, path: Path) -> None:
    """Numeric columns as doubles (NaN or None written as missing), the rest as strings."""
    lib, out = _library(), bytearray()

    @_SINK
    def sink(data, length, _context):
        out.extend(ctypes.string_at(data, length))
        return length

    writer = lib.readstat_writer_init()
    try:
        _check(lib.readstat_set_data_writer(writer, sink), "the data writer")
        numeric = [pd.api.types.is_numeric_dtype(df[name]) for name in df.columns]
        variables = []
        for name, is_number in zip(df.columns, numeric, strict=True):
            width = 8 if is_number else max(8, *(len(str(v).encode()) for v in df[name]))
            variable = lib.readstat_add_variable(
                writer, name.encode("ascii"), _DOUBLE if is_number else _STRING, width
            )
            variables.append(variable)
        _check(lib.readstat_begin_writing_sas7bdat(writer, None, len(df)), "the header")
        for row in df.itertuples(index=False):
            _check(lib.readstat_begin_row(writer), "a row")
            for variable, value, is_number in zip(variables, row, numeric, strict=True):
                if value is None or (is_number and math.isnan(value)):
                    code = lib.readstat_insert_missing_value(writer, variable)
                elif is_number:
                    code = lib.readstat_insert_double_value(writer, variable, float(value))
                else:
                    code = lib.readstat_insert_string_value(writer, variable, str(value).encode())
                _check(code, "a value")
            _check(lib.readstat_end_row(writer), "a row")
        _check(lib.readstat_end_writing(writer), "the end of the file")
    finally:
        lib.readstat_writer_free(writer)
    path.write_bytes(bytes(out))
