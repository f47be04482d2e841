"""Keyed hashes that every engine computes identically, as SQL over the relation `s`.

Each is keyed by the release's secret K (SQL of its decimal text), so its choices are
unforeseeable without K, and is built from arithmetic and digests both engines do
exactly, so DuckDB and Spark choose the same rows, persons and ids for the same key
(tests/test_releases_spark.py compares them; `mix` is the mixer's definition):

- `bound_hash_sql`: the person bound's h(K, person, n), ranking a person's rows;
- `row_hash_sql`: 64 bits over a row's canonical text, ranking a keys statistic's rows;
- `text_id_sql`: a text's 60-bit ids (a key's, a person's), so texts join as integers.
"""

from __future__ import annotations

import pyarrow as pa

from releases.compute.dialect import NTH, Dialect


def row_hash_sql(
    d: Dialect, typed: list[tuple[str, pa.DataType]], key: str, *, skip_others: bool = False
) -> str | None:
    """A keyed 64-bit hash of a row of the relation `s` that every dialect computes
    identically: the first 16 hex digits (64 bits; as text, their order is the number's)
    of SHA-256 over a canonical text of the secret `key` (SQL of its decimal text) and
    the columns `typed` (stored name, stored Arrow type), so two engines choose the
    same rows for the same key. Each value is a self-delimiting token: `n` (missing),
    `i<decimal>;` (an integer of any width), `s<bytes>:<text>` (text, its UTF-8 length
    first), `f...;` (a float: `_float_token`). Another stored type (a date, a boolean, a
    decimal: its text differs between engines) gives None, or with `skip_others` is left
    out of the text: the hash then still depends on the row's other columns alone (never
    on its position), so the choice is still the person's own rows' and K's."""
    tokens = []
    for name, kind in typed:
        x = f"s.{d.ident(name)}"
        if pa.types.is_integer(kind):
            token = f"'i' || CAST({x} AS {d.string}) || ';'"
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            token = _text_token(d, x)
        elif pa.types.is_floating(kind):
            token = _float_token(f"CAST({x} AS DOUBLE)", d)
        elif skip_others:
            continue
        else:
            return None
        tokens.append(f"coalesce({token}, 'n')")
    # one concat of the tokens (each never NULL): about 15 % faster on DuckDB than a chain of ||
    parts = ", ".join([key, "'|'", *tokens])
    text = f"concat({parts})"
    return f"substr({d.sha256.format(x=text)}, 1, 16)"


def _text_token(d: Dialect, x: str) -> str:
    """The canonical token of the text {x}: `s<bytes>:<text>`, its UTF-8 length first."""
    return f"'s' || CAST({d.octets.format(x=x)} AS {d.string}) || ':' || {x}"


def bound_hash_sql(d: Dialect, id_column: str, id_type: pa.DataType, key: str) -> str:
    """The person bound's keyed hash h(K, person, n) of a row of the relation `s` (its ID
    column and `NTH`, the row's place n among its person's rows) as a BIGINT in [0, 2**31),
    the same on every engine, so every engine keeps the same rows for the same key
    (`key`: SQL of K's decimal text). It depends on the person's rows alone: the ID, and
    each row's place among them (never its position in the dataset). Not over the row's
    content: building the canonical text of every read column cost more than the rest of
    a first release.

    h is `mix_sql` (integer arithmetic) over n and the ID's 31-bit pieces: an integer ID
    (signed, or unsigned of at most 32 bits) as it is; a text ID (or a wider unsigned
    one, by its decimal text) by 31 bits of MD5 over K and the text; an ID type without a
    canonical text is left out (h then depends on n alone). The choice needs no
    cryptographic strength: any choice that depends on the person's rows and K alone
    bounds a person's rows, and two persons sharing 31 bits only choose alike. SHA-256
    over a canonical text of K, the ID and n made the ranking step of a 10M-row first
    release (1.9M heavy persons) about 0.4 s slower than this. MD5 is the one digest
    both engines have: on Spark it is the dearest step of the heavy rows' hash (Commons
    Codec makes a digest per row: 2.6 s per 10M IDs on two cores, where Spark's crc32 and
    xxhash64 cost almost nothing), but DuckDB has neither of those, and a vectorized
    CRC-32 in Python (an Arrow UDF) took DuckDB 2.3 s over 4.2M IDs against 0.8 s for
    its own MD5."""
    x = f"s.{d.ident(id_column)}"
    pieces = [f"(CAST(s.{d.ident(NTH)} AS BIGINT) & {MIX_P})"]
    if pa.types.is_signed_integer(id_type) or (
        pa.types.is_unsigned_integer(id_type) and id_type.bit_width <= 32
    ):
        wide = f"CAST({x} AS BIGINT)"
        pieces += [
            f"({wide} & {MIX_P})",
            f"({d.shift_right.format(x=wide, n=31)} & {MIX_P})",
            f"({d.shift_right.format(x=wide, n=62)} & 3)",
        ]
    elif (
        pa.types.is_integer(id_type)
        or pa.types.is_string(id_type)
        or pa.types.is_large_string(id_type)
    ):
        # K's decimal text has no '|': the text after the tag is the ID's, whatever it holds
        tag, text = ("u", f"CAST({x} AS {d.string})") if pa.types.is_integer(id_type) else ("t", x)
        digest = d.md5.format(x=f"concat({key}, '|{tag}|', {text})")
        pieces.append(f"({HEX_BIGINT[d.name].format(x=f'substr({digest}, 1, 8)')} & {MIX_P})")
    return mix_sql(d, key, pieces)


#: the keyed mixer's modulus: the prime 2**31 - 1
MIX_P = 2_147_483_647
#: its multipliers (full-period Lehmer multipliers modulo MIX_P, L'Ecuyer's tables)
MIX_A = (742938285, 950706376, 1226874159, 1343714438, 2049513912, 784588716, 1914720637)
#: the constants its last rounds take in after the inputs (each below MIX_P)
MIX_C = (1540483477, 668265263, 1673464199, 1023358326)


def mix_sql(d: Dialect, key: str, inputs: list[str]) -> str:
    """A keyed mix of `inputs` (SQL of BIGINTs in [0, 2**31)) into [0, MIX_P) that every
    engine computes exactly: BIGINT arithmetic whose every value stays below 2**63 (no
    engine's overflow), so `mix` below is its definition. K's decimal text, padded to 21
    digits, gives three keys below 10**7; each round is s <- ((s xor v) + k) * a mod P,
    the state starting at the first key, v each input and then the constants MIX_C (the
    multiplication mod a prime after an exclusive or is linear in neither operation; the
    constant rounds mix the last input in further)."""
    padded = f"lpad({key}, 21, '0')"
    keys = [f"CAST(substr({padded}, {1 + 7 * i}, 7) AS BIGINT)" for i in range(3)]
    state = keys[0]
    for i, v in enumerate([*inputs, *(str(c) for c in MIX_C)]):
        mixed = d.xor.format(a=state, b=v)
        state = f"((({mixed}) + {keys[(i + 1) % 3]}) * {MIX_A[i % len(MIX_A)]} % {MIX_P})"
    return state


def mix(key: int, inputs: list[int]) -> int:
    """`mix_sql` in Python: its definition, for the tests."""
    padded = str(key).rjust(21, "0")
    keys = [int(padded[7 * i : 7 * i + 7]) for i in range(3)]
    state = keys[0]
    for i, v in enumerate([*inputs, *MIX_C]):
        state = ((state ^ v) + keys[(i + 1) % 3]) * MIX_A[i % len(MIX_A)] % MIX_P
    return state


#: a hexadecimal text {x} of at most 15 digits as a BIGINT, per dialect
HEX_BIGINT = {
    "duckdb": "CAST('0x' || {x} AS BIGINT)",
    "spark": "CAST(conv({x}, 16, 10) AS BIGINT)",
}


def text_id_sql(d: Dialect, x: str, key: str, role: str, names: list[str]) -> str:
    """BIGINT columns `names` (one or two, 60 bits each) of the SHA-256 of the text {x}
    keyed by the release's secret (`key`, SQL of its decimal text) and `role` ("key" or
    "person": a key's id is never a person's): the same on every engine, and
    unforeseeable without K (no one can choose two texts sharing an id)."""
    digest = d.sha256.format(x=f"concat({key}, '|{role}|', {_text_token(d, x)})")
    hexed = HEX_BIGINT[d.name]
    return ", ".join(
        f"{hexed.format(x=f'substr({digest}, {1 + 15 * i}, 15)')} AS {name}"
        for i, name in enumerate(names)
    )


def _float_token(v: str, d: Dialect) -> str:
    """A double's exact canonical text, from arithmetic both engines do exactly (their
    float-to-text conversions differ): `f<sign><m>e<p>;` with |v| = m * 2**p, m < 2**53 an
    integer and p the exponent of v's binary64 form less 52 (at least -1074: subnormals);
    `f0;` for zero (either sign), `fnan;`, `f+inf;`, `f-inf;`. floor(log2) may be one off
    near a power of two: the comparisons with powers of two (exact) correct it, and the
    division by one is exact."""
    a = f"abs({v})"
    guess = f"CAST(floor(log2({a})) AS BIGINT)"
    exponent = (
        f"(greatest({guess} + CASE WHEN {a} >= pow(2, {guess} + 1) THEN 1 "
        f"WHEN {a} < pow(2, {guess}) THEN -1 ELSE 0 END, -1022) - 52)"
    )
    mantissa = f"CAST({a} / pow(2, {exponent}) AS BIGINT)"
    return (
        f"CASE WHEN isnan({v}) THEN 'fnan;' "
        f"WHEN NOT {d.finite.format(x=v)} THEN CASE WHEN {v} > 0 THEN 'f+inf;' ELSE 'f-inf;' END "
        f"WHEN {v} = 0 THEN 'f0;' "
        f"ELSE 'f' || CASE WHEN {v} < 0 THEN '-' ELSE '' END || CAST({mantissa} AS {d.string}) "
        f"|| 'e' || CAST({exponent} AS {d.string}) || ';' END"
    )
