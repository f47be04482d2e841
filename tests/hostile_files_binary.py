"""Hostile Parquet and statistical files, small on disk, one function per file.

Each function writes its file into `folder` and returns the path. They are what
tests/test_hostile_binary.py ingests in a real worker and what bench/hostile.py
measures: the bombs expand to gigabytes when read whole, the wide .zsav holds long
strings that compress to almost nothing, and the int-then-decimal files hold a
column whose first INTEGER_ROWS values are whole numbers and whose later ones are
not (every one of them must be stored).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat

#: the whole numbers before the first decimal in the int-then-decimal files
INTEGER_ROWS = 10_000
#: the decimals after them
DECIMAL_ROWS = 2_000
#: the one long value of the 20 MB Parquet (compressed to about a KB)
LONG_VALUE_BYTES = 20 * 1024 * 1024
#: the one long value of the .dta (a Stata strL is stored plain: kept small on disk)
#: and of the Parquet whose value is within a page
DTA_LONG_VALUE_BYTES = 2 * 1024 * 1024


def int_then_decimal_values() -> list[float]:
    """INTEGER_ROWS whole numbers (as floats), then DECIMAL_ROWS values with .25."""
    whole = [float(i % 500) for i in range(INTEGER_ROWS)]
    return whole + [i + 0.25 for i in range(DECIMAL_ROWS)]


def parquet_dictionary_bomb(folder: Path, *, store_schema: bool = True) -> Path:
    """One 512 KiB text value referenced by 8,000 rows through a dictionary: a few KB
    on disk, about 4 GB once every row's text is decoded. Without `store_schema` the
    file has no Arrow schema (as Spark writes it): the column reads as plain text."""
    path = folder / "dictionary_bomb.parquet"
    rows = 8_000
    dictionary = pa.array(["a" * (512 * 1024)])
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), dictionary)
    table = pa.table({"label": column, "n": pa.array(np.arange(rows, dtype=np.int64))})
    pq.write_table(table, path, compression="zstd", compression_level=19, store_schema=store_schema)
    return path


def parquet_padded_dictionary_bomb(folder: Path) -> Path:
    """The dictionary bomb hidden in a large column chunk: 100,000 short distinct texts
    make the chunk 10 MB (read plain, not as a dictionary), and the other 100,000 rows
    point to one 512 KiB value: about 50 GB decoded, from a few hundred KB."""
    path = folder / "padded_dictionary_bomb.parquet"
    rows = 200_000
    dictionary = pa.array(["a" * (512 * 1024)] + [f"{i:045d}" for i in range(rows // 2)])
    indices = np.zeros(rows, dtype=np.int32)
    indices[::2] = np.arange(1, rows // 2 + 1)
    column = pa.DictionaryArray.from_arrays(pa.array(indices), dictionary)
    pq.write_table(pa.table({"label": column}), path, compression="zstd", store_schema=False)
    return path


def parquet_giant_page(folder: Path) -> Path:
    """One page of 124 MB (125 values of about 1 MB, under the per-value limit, written
    as one page): a few KB on disk, decompressed whole by pyarrow."""
    path = folder / "giant_page.parquet"
    values = [f"{i:04d}" + "a" * 1_040_000 for i in range(125)]
    pq.write_table(pa.table({"note": values}), path, compression="zstd")
    return path


def parquet_run_length_bomb(folder: Path) -> Path:
    """240 million rows of one integer, run-length encoded: a few KB on disk, about
    1.9 GB as 64-bit integers."""
    path = folder / "run_length_bomb.parquet"
    block = pa.table({"x": pa.array(np.zeros(8_000_000, dtype=np.int64))})
    with pq.ParquetWriter(path, block.schema, compression="zstd") as writer:
        for _ in range(30):
            writer.write_table(block, row_group_size=len(block))
    return path


def zsav_wide_strings(folder: Path) -> Path:
    """An SPSS .zsav of 1,000 rows with ten 32,000-character text columns: the
    strings compress to a few MB, and 320 MB of text once read."""
    path = folder / "wide_strings.zsav"
    rows, width = 1_000, 32_000
    frame = pd.DataFrame(
        {f"text{i}": [chr(97 + (r + i) % 26) * width for r in range(rows)] for i in range(10)}
    )
    frame["id"] = np.arange(rows, dtype=np.float64)
    pyreadstat.write_sav(frame, str(path), compress=True)
    return path


def parquet_long_value(folder: Path) -> Path:
    """A Parquet file with one 20 MB text value among short ones."""
    path = folder / "long_value.parquet"
    values = ["short"] * 99 + ["x" * LONG_VALUE_BYTES]
    pq.write_table(pa.table({"note": values}), path, compression="zstd")
    return path


def parquet_2mib_value(folder: Path) -> Path:
    """A Parquet file with one 2 MiB text value (over the per-value limit, within a page)."""
    path = folder / "2mib_value.parquet"
    values = ["short"] * 99 + ["x" * DTA_LONG_VALUE_BYTES]
    pq.write_table(pa.table({"note": values}), path, compression="zstd")
    return path


def dta_long_value(folder: Path) -> Path:
    """A Stata .dta with one 2 MiB strL value among short ones."""
    path = folder / "long_value.dta"
    frame = pd.DataFrame({"note": ["short"] * 99 + ["x" * DTA_LONG_VALUE_BYTES], "n": range(100)})
    frame.to_stata(path, write_index=False, version=117, convert_strl=["note"])
    return path


def dta_gzip_long_value(folder: Path) -> Path:
    """The same Stata file with a 20 MB value, gzip-wrapped (small on disk)."""
    plain = folder / "long_value_plain.dta"
    frame = pd.DataFrame({"note": ["short"] * 99 + ["x" * LONG_VALUE_BYTES], "n": range(100)})
    frame.to_stata(plain, write_index=False, version=117, convert_strl=["note"])
    path = folder / "long_value_gzip.dta.gz"
    with open(plain, "rb") as source, gzip.open(path, "wb") as target:
        target.write(source.read())
    plain.unlink()
    return path


def _int_then_decimal_frame() -> pd.DataFrame:
    values = int_then_decimal_values()
    return pd.DataFrame({"income": values, "id": np.arange(len(values), dtype=np.float64)})


def dta_int_then_decimal(folder: Path) -> Path:
    """A Stata .dta whose double column holds whole numbers first, decimals later."""
    path = folder / "int_then_decimal.dta"
    pyreadstat.write_dta(_int_then_decimal_frame(), str(path))
    return path


def sav_int_then_decimal(folder: Path) -> Path:
    """An SPSS .sav whose numeric column holds whole numbers first, decimals later."""
    path = folder / "int_then_decimal.sav"
    pyreadstat.write_sav(_int_then_decimal_frame(), str(path))
    return path


def parquet_int_then_decimal(folder: Path) -> Path:
    """A Parquet file whose float column holds whole numbers first (a row group of
    them), decimals later (the next row groups)."""
    path = folder / "int_then_decimal.parquet"
    pq.write_table(pa.Table.from_pandas(_int_then_decimal_frame()), path, row_group_size=4_000)
    return path


#: every generator, by name (the bench runs them all)
GENERATORS = {
    "parquet_dictionary_bomb": parquet_dictionary_bomb,
    "parquet_padded_dictionary_bomb": parquet_padded_dictionary_bomb,
    "parquet_giant_page": parquet_giant_page,
    "parquet_run_length_bomb": parquet_run_length_bomb,
    "zsav_wide_strings": zsav_wide_strings,
    "parquet_long_value": parquet_long_value,
    "parquet_2mib_value": parquet_2mib_value,
    "dta_long_value": dta_long_value,
    "dta_gzip_long_value": dta_gzip_long_value,
    "dta_int_then_decimal": dta_int_then_decimal,
    "sav_int_then_decimal": sav_int_then_decimal,
    "parquet_int_then_decimal": parquet_int_then_decimal,
}
