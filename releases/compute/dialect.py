"""The SQL spellings that differ between the engines a plan runs on (DuckDB, Spark),
and the reserved column names every engine's queries share.

A plan (releases.compute.plan), the keyed hashes (releases.compute.keyed_hash) and
each engine's own queries write SQL through one `Dialect`, so a query means the same
on every engine: the tests run the same plan on both and compare.
"""

from __future__ import annotations

from dataclasses import dataclass

PERSON = "__person"  # the privacy unit's ID column, carried to a keys query's rows
ROW = "__row"  # the source's row number (a stable row identity for the person bound)
NTH = "__nth"  # a row's place among its person's rows (1, 2, ... in row-number order)


@dataclass(frozen=True)
class Dialect:
    """The few spellings that differ between engines."""

    name: str
    position: str  # 1-based position of {x} in the array literal {items}; NULL/0 when absent
    array: str
    round_even: str  # {x} rounded half to even, for the CAST to BIGINT that follows
    exact_sum: str
    finite: str  # {x} is a finite number (not NaN, not +-inf)
    string: str  # the text type
    anti_join: str  # rows of the left side with no match on the right
    quote: str
    sha256: str  # the lower-case hex SHA-256 of the UTF-8 text {x}
    octets: str  # the length of the text {x} in UTF-8 bytes
    md5: str  # the lower-case hex MD5 of the UTF-8 text {x}
    xor: str  # the bitwise exclusive or of the BIGINTs {a} and {b}
    shift_right: str  # the BIGINT {x} shifted right by {n} bits, the sign copied in
    element: str = "{items}[{i}]"  # the {i}-th (1-based) element of the array {items}
    # an array of doubles from their texts {}, as ONE constant: spelled as an array of
    # casts, DuckDB builds the array again for every vector of rows (a grid of thousands
    # of edges then costs more time and memory than the rest of a release)
    doubles: str | None = None
    # a category's cell found by a tree of comparisons (`plan._category_tree`) rather than by
    # `position` over the array: Spark's array_position reads each element through generic
    # array access, about 5x slower than the tree at 50 categories
    category_tree: bool = False
    # a backslash in a text literal escapes the next character (Spark's parser): written
    # doubled, or a text ending in one would run its literal on into the SQL after it
    backslash_escapes: bool = False

    def ident(self, name: str) -> str:
        q = self.quote
        return q + name.replace(q, q + q) + q

    def double(self, x: float) -> str:
        return f"CAST('{float(x)!r}' AS DOUBLE)"

    def double_array(self, xs) -> str:
        """The array of the floats `xs`, each exactly (its shortest round-trip text)."""
        if self.doubles is None:
            return self.array.format(", ".join(self.double(x) for x in xs))
        return self.doubles.format(", ".join(repr(float(x)) for x in xs))

    def text(self, s: str) -> str:
        """The SQL literal of the text `s`, exactly (whatever characters it holds)."""
        if self.backslash_escapes:
            s = s.replace("\\", "\\\\")
        return "'" + s.replace("'", "''") + "'"


DUCKDB = Dialect(
    name="duckdb",
    position="list_position({items}, {x})",
    array="[{}]",
    # DuckDB's DOUBLE -> BIGINT cast itself rounds half to even (2.5 -> 2, -0.5 -> 0):
    # round_even() before it only cost time (~0.1 s per column at 10M rows); the
    # property tests' halves check the cast against numpy's rint
    round_even="{x}",
    exact_sum="sum({x})",  # BIGINT sums into HUGEINT
    finite="isfinite({x})",
    string="VARCHAR",
    anti_join="ANTI JOIN",
    quote='"',
    sha256="sha256({x})",
    octets="strlen({x})",
    md5="md5({x})",
    xor="xor({a}, {b})",
    shift_right="({x} >> {n})",
    doubles="CAST('[{}]' AS DOUBLE[])",
)
SPARK = Dialect(
    name="spark",
    position="nullif(array_position({items}, {x}), 0)",
    array="array({})",
    # rint (Java's Math.rint) rounds a double half to even, as bround does, without
    # bround's detour through BigDecimal and the double's text (~7 % of a release's CPU)
    round_even="rint({x})",
    exact_sum="sum(CAST({x} AS DECIMAL(38, 0)))",
    finite="(NOT isnan({x}) AND abs({x}) < CAST('Infinity' AS DOUBLE))",
    string="STRING",
    anti_join="LEFT ANTI JOIN",
    quote="`",
    sha256="sha2(CAST({x} AS BINARY), 256)",
    octets="octet_length({x})",
    md5="md5(CAST({x} AS BINARY))",
    xor="({a} ^ {b})",
    shift_right="shiftright({x}, {n})",
    element="element_at({items}, CAST({i} AS INT))",
    category_tree=True,
    backslash_escapes=True,
)
