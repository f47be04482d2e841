"""A release's true aggregation as ONE relational plan (SQL text, engine-neutral).

Built from the frozen spec alone (public domains, bounds, grids) and the stored
columns' types; run by releases.compute.duckdb_engine (a Spark runner can take
the same plan with `SPARK`). Per row, in SQL:

- a column read as declared (datasets.domains.read_declared) for the "plain"
  declarations SQL reproduces exactly: a numeric column stored as integer or
  float (non-finite -> missing; nonzero numeric missing codes -> missing), a
  categorical column stored as text or integer without missing codes. Anything
  else (dates, text codes, numbers in text) is not on the plan: `plan_or_none`
  returns None and the release goes through the numpy readers;
- a cell code per axis: declared category (its position), "Other", "Missing"
  (policy "category") or -1 (dropped); numeric bins by the declared edges
  (clamped, the last bin closed), exactly as releases.compute.readers.Axis;
- a value in grid units: u = round_half_even(clip(v / gamma, lo_u, hi_u)) as
  BIGINT (sensitivity.to_grid_units: v / gamma is exact, gamma a power of two);
  a spread's centred units w = 2 u - (lo_u + hi_u);
- a quantile's cell of its candidate grid (the number of candidates <= v), by
  dpportal.privacy.grid_cells' checked arithmetic on an evenly spaced grid
  (`even_grid_cells`; any other grid, or the Spark dialect, keeps the statistic off
  the plan).

One GROUP BY GROUPING SETS pass gives every statistic's per-cell counts and
exact integer sums (BIGINT summed into HUGEINT / DECIMAL(38, 0)); a
cross-tabulation contributes one grouping set per maximal marginal of its
workload, each counting only the rows every one of its columns gives a cell
(its lower tables are exact sums of these, made downstream), so one scan serves
all its tables. `shape` turns the rows into the numpy readers' aggregates
(the readers stay the test oracle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from django.conf import settings

from dpportal.privacy.grid_cells import GridCells
from dpportal.privacy.sensitivity import check_granularity, grid_bounds
from dpportal.privacy.unbounded_bounds import SearchGrid
from releases import kinds
from releases.compute.dialect import DUCKDB, PERSON, ROW, Dialect
from releases.compute.keyed_hash import HEX_BIGINT, row_hash_sql, text_id_sql
from releases.compute.readers import Axis, maximal_marginals
from releases.compute.readers_bounds import grid_edges
from releases.compute.readers_stats import Partial
from releases.kinds.bounds import grid_of
from releases.kinds.quantiles import grid_of as grid_of_quantiles

#: the kinds the plan aggregates (rows per person through its own query over the ID column,
#: releases.compute.rows_per_person; quantiles only on an evenly spaced grid: `_ranks_part`)
OFF_PLAN = ("persons",)
PLAN_KINDS = tuple(n for n, kind in kinds.REGISTRY.items() if kind.aggregate not in OFF_PLAN)


class KeyIdCollision(RuntimeError):
    """Two texts of a keys statistic share an id (`Plan.keys_sql`): the release is refused
    rather than publish a count under a text it is not the count of."""


def checked_keys(rows) -> dict[str, int]:
    """A keys statistic's {key: count} from `Plan.keys_sql`'s rows (k, n, shared); refused
    (`KeyIdCollision`) when any text shares its id with another."""
    out: dict[str, int] = {}
    for k, n, shared in rows:
        if int(shared) != 1:
            raise KeyIdCollision("Two keys share an id under this release's key; run it again.")
        out[str(k)] = int(n)
    return out


@dataclass(frozen=True)
class GridAxis:
    """The cells of a public search grid's edges as one grouping axis (private bounds)."""

    size: int


def _grid_cell_sql(value: str, grid: SearchGrid, edges: list[float], d: Dialect) -> str:
    """The number of `edges` strictly below `value` (its cell, as GridCountsReader counts
    it); -1 for a missing value.

    The edges are centre +- unit * (ratio**i - 1) (to 12 significant digits), so the count
    is guessed from the inverse formula: steps + ceil(ln(1 + (v - c) / unit) / ln r) above
    the centre, steps - floor(ln(1 + (c - v) / unit) / ln r) at or below it, clamped to
    0..len(edges). Floating-point error can put a value within about 1e-12 (relative) of an
    edge on its other side, never past a second edge (consecutive edges are a step of at
    least unit * (r - 1) apart, and 1 % or more of their distance from the centre), so
    the guess g is off by at most one; comparing the value with the two edges around g
    (the same float literals the readers use) makes it exact. Each row costs a logarithm
    and two comparisons, whatever the number of edges."""
    m = len(edges)
    items = d.double_array(edges)
    c, s = d.double(float(grid.centre)), d.double(float(grid.unit))
    log_r = d.double(math.log(float(grid.ratio)))
    steps = grid.steps()
    # a distance past 4 limits guesses past the last edge all the same: capping it keeps
    # a huge value (1e308) from an infinite logarithm, whose cast would fail the release
    cap = d.double(float(grid.limit / grid.unit) * 4)
    up = f"CAST(ceil(ln(1 + least(({value} - {c}) / {s}, {cap})) / {log_r}) AS BIGINT)"
    down = f"CAST(floor(ln(1 + least(({c} - {value}) / {s}, {cap})) / {log_r}) AS BIGINT)"
    g = (
        f"(CASE WHEN {value} > {c} THEN least({steps} + {up}, {m}) "
        f"ELSE greatest({steps} - least({down}, {steps}), 0) END)"
    )

    def edge(k: str) -> str:  # the k-th edge, 0-based
        return d.element.format(items=items, i=f"{k} + 1")

    above = f"CASE WHEN {g} < {m} AND {edge(g)} < {value} THEN 1 ELSE 0 END"
    below = f"CASE WHEN {g} > 0 AND {edge(f'{g} - 1')} >= {value} THEN 1 ELSE 0 END"
    return f"CASE WHEN {value} IS NULL THEN -1 ELSE {g} + ({above}) - ({below}) END"


@dataclass(frozen=True)
class EvenGridCells:
    """GridCells.cells in SQL, in two layers: `estimate` (over the value's SQL) is GridCells'
    f, and `cell(x, f)` (over the names of the value and of f, a layer above) the number
    of candidates <= x (searchsorted, side "right"), -1 for a missing value. Two layers:
    spelled in one, DuckDB evaluates f (and the value's own CASE) once per use."""

    estimate: str
    below: str  # the array [-inf, c_1, ..., c_m]: below[f + 1] (1-based) is c_f

    def cell(self, x: str, f: str, d: Dialect) -> str:
        edge = d.element.format(items=self.below, i=f"{f} + 1")
        return f"CASE WHEN {x} IS NULL THEN -1 WHEN {x} >= {edge} THEN {f} ELSE {f} - 1 END"


def even_grid_cells(value: str, grid: GridCells, d: Dialect) -> EvenGridCells | None:
    """The SQL of GridCells' cells over `value` (SQL), or None when the grid is not counted
    arithmetically (searchsorted: off the plan).

    The same route as GridCells on an evenly spaced grid, with its float64 operations in
    the same order (a multiply, an add, the clamps, then the floor: clamping first keeps
    a huge value out of the integer cast, and floor commutes with integer clamps), so
    the estimate f is the integer numpy computes, and GridCells' construction check
    (f - g is 0 or 1 at both ends of every cell) holds here too: g = f - 1 + [x >= c_f],
    c_0 = -inf."""
    coefficients = grid.estimate_coefficients()
    if coefficients is None:
        return None
    a, b = (d.double(c) for c in coefficients)
    m = grid.m
    below = d.double_array([-math.inf, *grid.edges])
    estimate = f"CAST(floor(least(greatest({value} * {a} + {b}, 0), {m})) AS BIGINT)"
    return EvenGridCells(estimate=estimate, below=below)


@dataclass
class Part:
    """One statistic's place in the plan: its grouping set and its aggregate columns.

    A cross-tabulation's part has `tables`: one sub-part (axes, grouping set, the
    shared count column) per maximal marginal, shaped into its list of arrays.
    """

    spec: dict[str, Any]
    axes: list[Axis]
    grouping: tuple[str, ...]
    columns: list[str] = field(default_factory=list)
    tables: list[Part] | None = None
    #: categories found in the data: the layer-2 column of its keys (text, cut to
    #: RELEASE_KEYS_MAX_KEY_CHARS); counted by its own query (`keys_sql`), in no grouping set
    keys: str | None = None

    @property
    def groupings(self) -> list[tuple[str, ...]]:
        if self.keys is not None:
            return []
        return [t.grouping for t in self.tables] if self.tables is not None else [self.grouping]


@dataclass
class Plan:
    dialect: Dialect
    source_columns: list[str]  # stored columns read (the ID column excluded)
    values: dict[str, str]  # per row, layer 1: stored column read as declared -> SQL
    # per row, layer 2 (over the values): cells and grid units (integers), and a quantile's
    # value beside its grid estimate (even_grid_cells)
    selects: dict[str, str]
    parts: list[Part]
    aggregates: dict[str, str]  # name -> aggregate SQL
    # per row, layer 3 (over the cells): a cross-tabulation's "row in it" as 1 or NULL,
    # counted as count(k), since a condition inside the aggregate is evaluated once per
    # grouping set (about three times slower with 28 sets on DuckDB); a quantile's cell
    flags: dict[str, str] = field(default_factory=dict)
    #: the ID column's stored type (None without one): a keys statistic's hash of the person
    id_type: pa.DataType | None = None

    @property
    def groupings(self) -> list[tuple[str, ...]]:
        seen: list[tuple[str, ...]] = []
        for part in self.parts:
            for grouping in part.groupings:
                if grouping not in seen:
                    seen.append(grouping)
        return seen

    @property
    def cell_columns(self) -> list[str]:
        return sorted({c for g in self.groupings for c in g})

    def aggregate_sql(self, relation: str) -> str:
        """The one aggregation query over `relation` (the rows kept by the privacy unit)."""
        return self.grouping_sql(f"({self.rows_sql(relation)})")

    def rows_sql(self, relation: str, extra: dict[str, str] | None = None) -> str:
        """Per row of `relation` (its stored columns): the cell codes and grid units
        (`selects`) with the `flags` over them, then the `extra` columns
        (name -> SQL over the stored columns) carried through unchanged."""
        extra = extra or {}
        values = [f"{sql} AS {name}" for name, sql in [*self.values.items(), *extra.items()]]
        rows = [f"{sql} AS {name}" for name, sql in self.selects.items()] + list(extra)
        sql = (
            f"SELECT {', '.join(rows) or '1 AS one'} FROM "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"(SELECT {', '.join(values) or '1 AS one'} FROM {relation}) AS v"
        )
        if not self.flags:
            return sql
        flags = ", ".join(f"{expr} AS {name}" for name, expr in self.flags.items())
        return f"SELECT *, {flags} FROM ({sql}) AS c"  # noqa: S608 - SQL built above

    def grouping_sql(self, rows: str) -> str:
        """The GROUPING SETS aggregation over `rows` (a relation of `rows_sql`'s columns)."""
        cells = self.cell_columns
        sets = ", ".join("(" + ", ".join(g) + ")" for g in self.groupings)
        # bit k (from the right) set: the k-th last cell column is not grouped; spelled with
        # grouping() per column, since Spark's grouping_id(cols) needs the GROUP BY's order
        bits = [f"grouping({c}) * {1 << (len(cells) - 1 - i)}" for i, c in enumerate(cells)]
        gid = " + ".join(bits) if cells else "0"
        outputs = [
            f"{gid} AS gid",
            *cells,
            *(f"{sql} AS {n}" for n, sql in self.aggregates.items()),
        ]
        return (
            f"SELECT {', '.join(outputs)} FROM {rows} AS r "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"GROUP BY GROUPING SETS ({sets})"
        )

    @property
    def keys_parts(self) -> list[Part]:
        return [part for part in self.parts if part.keys is not None]

    def keys_sql(
        self,
        part: Part,
        relation: str,
        id_column: str | None,
        key: str = "CAST($key::UBIGINT AS VARCHAR)",
    ) -> str:
        """`keys_sql_over` the `rows_sql` rows of `relation` (the rows the privacy unit
        keeps), with the ID column as `PERSON` when there is one."""
        extra = {PERSON: self.dialect.ident(id_column)} if id_column else None
        return self.keys_sql_over(part, self.rows_sql(relation, extra), bool(id_column), key)

    def keys_sql_over(self, part: Part, rows: str, by_person: bool, key: str) -> str:
        """One statistic of the categories found in the data over `rows` (a query of
        `rows_sql`'s columns, the rows the privacy unit keeps, with `PERSON` when
        `by_person`): rows (k, n, shared) -- a key's text, the distinct persons holding
        it, and how many texts share its id (more than 1: the engines refuse the
        release, `checked_keys`). Each person is counted in at most keys_per_person of
        their distinct keys, those with the smallest keyed hash h(person, key id, K)
        (`key`: SQL of the release's secret's decimal text, spelled as the engine binds
        it), ties by the id. Without a person column, rows per key (shared 1). Missing
        keys (and rows without an ID) are not counted.

        On integers: a text as a group key or a window's partition keeps its bytes where
        DuckDB's memory limit cannot evict them, so the distinct (person, key id) pairs
        and the ranking are over BIGINTs -- the key's id, 60 bits of SHA-256 over K and
        its text (`text_id_sql`, the same on every engine), and the person itself when
        its ID is not text, else 120 bits of its own (two BIGINTs). Two columns, not
        more: at 100M rows (80M persons, 192 MB) DuckDB's distinct over (person, two
        BIGINTs) ran out of memory, over (person, one) it spilled and completed. The
        texts come back at the end from the distinct texts of the kept rows (one group
        per key, never per pair), joined to the counted ids. The cost is a SHA-256 per
        kept row (about twice the text query's time with 7 short keys at 10M rows).

        Privacy: a person's rows give one id per text, so a person is in at most
        keys_per_person ranked pairs, each a distinct id, counted once; two texts
        sharing an id only merge (a person holding both counted once), lowering counts.
        A text's count is its own only when its id is its alone: `shared` counts every
        text of the kept rows with a counted id, and a release with any shared id is
        refused (never a count under a text it is not the count of; a fresh K gives
        fresh ids). With K secret no one can choose two texts sharing an id; by chance,
        among n distinct keys, the probability is below n**2 / 2**61 (1e-6 at a million
        keys): a refused release, never a wrong count. Two text IDs sharing their 120
        bits would be ranked as one person (their union counted in at most
        keys_per_person keys): not detected, with probability below n**2 / 2**121 for n
        persons (1e-20 at 100M), far below any delta a release takes. h is
        `row_hash_sql` over the person's token (left out when its type has no canonical
        text) and the key's id, its first 60 bits a BIGINT sort key, so DuckDB and Spark
        keep the same keys for the same K; only a person with more keys than the bound
        is hashed (a count per person beside the ranking, the same partition)."""
        d, k = self.dialect, part.keys
        if not by_person:
            return (
                f"SELECT {k} AS k, count(*) AS n, 1 AS shared FROM ({rows}) AS r "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
                f"WHERE {k} IS NOT NULL GROUP BY {k}"
            )
        kept = (
            f"(SELECT {PERSON} AS p, {k} AS t FROM ({rows}) AS r "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"WHERE {k} IS NOT NULL AND {PERSON} IS NOT NULL)"
        )
        bound = int(part.spec["keys_per_person"])
        id_type = self.id_type or pa.null()
        if pa.types.is_string(id_type) or pa.types.is_large_string(id_type):
            person = ["p1", "p2"]
            typed = [("p1", pa.int64()), ("p2", pa.int64())]
            person_ids = text_id_sql(d, "s.p", key, "person", person)
        else:
            person, typed, person_ids = ["p"], [("p", id_type)], "s.p"
        ids = ["kid"]
        pairs = (
            f"SELECT DISTINCT {', '.join([*person, *ids])} FROM (SELECT {person_ids}, "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"{text_id_sql(d, 's.t', key, 'key', ids)} FROM {kept} AS s) AS i"
        )
        by = ", ".join(f"s.{c}" for c in person)
        # "keys|" after K: not the text of any row's hash (row_hash_sql's tokens follow "K|")
        typed = [*typed, ("kid", pa.int64())]
        order = row_hash_sql(d, typed, f"{key} || '|keys'", skip_others=True)
        # its first 60 bits as a BIGINT: a text sort key is held in the window's memory too
        order = HEX_BIGINT[d.name].format(x=f"substr({order}, 1, 15)")
        counts = (
            f"SELECT kid, count(*) AS n FROM ("  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"SELECT s.kid, row_number() OVER (PARTITION BY {by} ORDER BY "
            f"CASE WHEN s.m > {bound} THEN {order} END, s.kid) AS rn FROM ("
            f"SELECT s.*, count(*) OVER (PARTITION BY {by}) AS m FROM ({pairs}) AS s) AS s"
            f") AS ranked WHERE rn <= {bound} GROUP BY kid"
        )
        texts = (
            f"SELECT s.t, {text_id_sql(d, 's.t', key, 'key', ids)} FROM "  # noqa: S608 - names quoted (Dialect.ident), literals (Dialect.text)
            f"(SELECT DISTINCT t FROM {kept} AS s) AS s"
        )
        return (
            f"SELECT x.t AS k, c.n, count(*) OVER (PARTITION BY c.kid) AS shared "  # noqa: S608 - SQL built above
            f"FROM ({counts}) AS c JOIN ({texts}) AS x ON x.kid = c.kid"
        )

    def shape(
        self, rows: list[tuple], names: list[str], keys: dict[int, dict[str, int]] | None = None
    ) -> list[Any]:
        """The result rows as the numpy readers' aggregates, statistic by statistic (a keys
        statistic's counts from `keys`, by its place in the parts)."""
        keys = keys or {}
        cells = self.cell_columns
        by_set: dict[frozenset[str], list[dict[str, Any]]] = {
            frozenset(g): [] for g in self.groupings
        }
        for row in rows:
            record = dict(zip(names, row, strict=True))
            gid = int(record["gid"])
            grouped = frozenset(
                c for i, c in enumerate(cells) if not gid >> (len(cells) - 1 - i) & 1
            )
            if grouped in by_set and all(int(record[c]) >= 0 for c in grouped):
                by_set[grouped].append(record)
        return [
            keys.get(i, {})
            if part.keys is not None
            else _shape_part(part, by_set[frozenset(part.grouping)])
            if part.tables is None
            else [_shape_table(t, by_set[frozenset(t.grouping)]) for t in part.tables]
            for i, part in enumerate(self.parts)
        ]


def _cell_index(part: Part, record: dict[str, Any]) -> int:
    index = 0
    for axis, column in zip(part.axes, part.grouping, strict=True):
        index = index * axis.size + int(record[column])
    return index


def _shape_table(table: Part, records: list[dict[str, Any]]) -> np.ndarray:
    """One marginal table of a cross-tabulation: its cell counts, shaped (C order)."""
    shape = tuple(a.size for a in table.axes)
    counts = np.zeros(shape, dtype=np.int64)
    (column,) = table.columns
    for record in records:
        counts[tuple(int(record[c]) for c in table.grouping)] = int(record[column] or 0)
    return counts


def _shape_part(part: Part, records: list[dict[str, Any]]) -> Any:
    kind = part.spec["kind"]
    size = int(np.prod([a.size for a in part.axes])) if part.axes else 1
    if kinds.get(kind).aggregate in ("grid_counts", "ranks"):
        counts = np.zeros(size, dtype=np.int64)
        for record in records:
            counts[int(record[part.grouping[0]])] = int(record[part.columns[0]] or 0)
        return counts
    vectors = [[0] * size for _ in part.columns]
    for record in records:
        cell = _cell_index(part, record) if part.axes else 0
        for vector, column in zip(vectors, part.columns, strict=True):
            vector[cell] = int(record[column] or 0)
    if kind in ("histogram", "argmax", "count"):
        counts = np.array(vectors[0], dtype=np.int64)
        if kind == "count":
            return (
                int(counts[part.axes[0].labels.index(part.spec["category"])])
                if part.axes
                else int(counts[0])
            )
        if kind == "argmax":
            return counts[: len(part.axes[0].categories)].copy()
        return counts
    if kind == "sum":
        return vectors[0][0]
    if kind == "mean":
        return [vectors[0][0], vectors[1][0]]
    return Partial(vectors)


def _plain_numeric(domain: dict[str, Any], storage: pa.DataType, d: Dialect) -> str | None:
    """read_declared of a numeric column stored as numbers (None: not reproducible in SQL)."""
    if not (pa.types.is_integer(storage) or pa.types.is_floating(storage)) or domain.get("date"):
        return None
    v = f"CAST({d.ident(domain['name'])} AS DOUBLE)"
    keep = [d.finite.format(x=v)]  # NaN and +-inf are missing
    codes = [float(c) for c in domain.get("missing_codes") or []]
    if any(c == 0 for c in codes):
        return None  # Arrow tells -0.0 from 0.0 here, SQL does not
    finite = [c for c in codes if math.isfinite(c)]
    if finite:
        keep.append(f"NOT ({v} IN ({', '.join(d.double(c) for c in finite)}))")
    return f"CASE WHEN {' AND '.join(keep)} THEN {v} END"


def _text_sql(domain: dict[str, Any], storage: pa.DataType, d: Dialect) -> str | None:
    """A categorical column as text (read_declared leaves it as stored; Axis casts it)."""
    if domain.get("missing_codes") or domain.get("date"):
        return None
    if pa.types.is_integer(storage):
        return f"CAST({d.ident(domain['name'])} AS {d.string})"
    if pa.types.is_string(storage) or pa.types.is_large_string(storage):
        return d.ident(domain["name"])
    return None


def _cell_sql(axis: Axis, value: str, d: Dialect) -> str:
    """Axis.codes in SQL over the declared value column `value`."""
    missing = axis.size - 1 if axis.missing_cell else -1
    if axis.categorical:
        cats = axis.categories.to_pylist()
        if d.category_tree and len(cats) <= TREE_CATEGORIES:
            found = _category_tree(cats, value, d)
            return f"CASE WHEN {value} IS NULL THEN {missing} ELSE {found} END"
        items = d.array.format(", ".join(d.text(c) for c in cats))
        found = d.position.format(items=items, x=value)
        return (
            f"CASE WHEN {value} IS NULL THEN {missing} ELSE coalesce({found} - 1, {len(cats)}) END"
        )
    edges = axis.edges
    branches = " ".join(
        f"WHEN {value} < {d.double(edges[i + 1])} THEN {i}" for i in range(len(edges) - 2)
    )
    return f"CASE WHEN {value} IS NULL THEN {missing} {branches} ELSE {len(edges) - 2} END"


#: `_category_tree`: the most categories found by a tree (its SQL grows with them, and a
#: generated method past the JVM's compile limit would run interpreted)
TREE_CATEGORIES = 64
#: `_category_tree`: the most equality tests at a leaf
TREE_LEAF = 4


def _category_tree(cats: list[str], value: str, d: Dialect) -> str:
    """The 0-based place of the text {value} (not NULL) among `cats`, or len(cats) when it
    is none of them, as `position` finds it (the first place of a repeated text): a binary
    search by comparisons in UTF-8 byte order (the engine's text order), equality tests
    at the leaves."""
    first: dict[str, int] = {}
    for i, c in enumerate(cats):
        first.setdefault(c, i)
    items = sorted(first.items(), key=lambda item: item[0].encode())

    def tree(lo: int, hi: int) -> str:
        if hi - lo <= TREE_LEAF:
            tests = " ".join(f"WHEN {value} = {d.text(c)} THEN {i}" for c, i in items[lo:hi])
            return f"CASE {tests} ELSE {len(cats)} END"
        mid = (lo + hi) // 2
        below, above = tree(lo, mid), tree(mid, hi)
        return f"CASE WHEN {value} < {d.text(items[mid][0])} THEN {below} ELSE {above} END"

    return tree(0, len(items)) if items else str(len(cats))


def _units_sql(v: str, spec: dict[str, Any], d: Dialect) -> str | None:
    lo_u, hi_u = grid_bounds(spec["lower"], spec["upper"], spec["granularity"])
    g = check_granularity(spec["granularity"])
    exponent = g.numerator.bit_length() - g.denominator.bit_length()
    scale = math.ldexp(1.0, -exponent)
    if not math.isfinite(scale) or scale == 0:
        return None
    clipped = f"greatest(least({v} * {d.double(scale)}, {d.double(hi_u)}), {d.double(lo_u)})"
    # greatest/least skip NULLs (DuckDB, Spark): a missing value must stay missing
    return f"CASE WHEN {v} IS NOT NULL THEN CAST({d.round_even.format(x=clipped)} AS BIGINT) END"


def plan_or_none(spec: dict[str, Any], schema: pa.Schema, dialect: Dialect = DUCKDB) -> Plan | None:
    """The plan of a frozen spec, or None when some statistic or column is not on it."""
    d = dialect
    stats = spec["statistics"]
    person = (spec.get("privacy_unit") or {}).get("id_column")
    if not all(_on_plan(s["kind"]) for s in stats) or ROW in schema.names:
        return None
    values: dict[str, str] = {}  # "v<k>": the k-th stored column read as declared
    selects: dict[str, str] = {}
    cell_names: dict[str, str] = {}  # stored column -> its cell-code column
    aggregates: dict[str, str] = {}
    flags: dict[str, str] = {}
    parts: list[Part] = []
    source: list[str] = []

    def storage(name: str) -> pa.DataType | None:
        if name not in schema.names:
            return None
        if name not in source:
            source.append(name)
        return schema.field(name).type

    def value(domain: dict[str, Any], numeric: bool) -> str | None:
        """The layer-1 column of a stored column read as declared (one per column)."""
        kind = storage(domain["name"])
        if kind is None:
            return None
        read = _plain_numeric if numeric else _text_sql
        sql = read(domain, kind, d)
        if sql is None:
            return None
        for name, existing in values.items():
            if existing == sql:
                return name
        name = f"v{len(values)}"
        values[name] = sql
        return name

    def cell(domain: dict[str, Any]) -> tuple[Axis, str] | None:
        axis = Axis.from_domain(domain)
        name = domain["name"]
        if name not in cell_names:
            v = value(domain, numeric=not axis.categorical)
            if v is None:
                return None
            cell_names[name] = f"c{len(cell_names)}"
            selects[cell_names[name]] = _cell_sql(axis, v, d)
        return axis, cell_names[name]

    for i, s in enumerate(stats):
        kind = s["kind"]
        if kinds.get(kind).aggregate == "keys":
            v = value(s["columns"][0], numeric=False)
            if v is None:
                return None
            cut = int(settings.RELEASE_KEYS_MAX_KEY_CHARS)
            selects[f"t{i}"] = f"substr(CAST({v} AS {d.string}), 1, {cut})"
            parts.append(Part(spec=s, axes=[], grouping=(), keys=f"t{i}"))
            continue
        if kinds.get(kind).aggregate == "marginals":
            marginals = _marginals_part(i, s, cell)
            if marginals is None:
                return None
            parts.append(marginals[0])
            if marginals[1] is None:
                aggregates[f"s{i}_n"] = "count(*)"
            else:
                flags[f"k{i}"] = marginals[1]
                aggregates[f"s{i}_n"] = f"count(k{i})"
            continue
        if kinds.get(kind).aggregate == "grid_counts":
            v = value(s["columns"][0], numeric=True)
            if v is None:
                return None
            edges = [float(e) for e in grid_edges(s)]
            selects[f"b{i}"] = _grid_cell_sql(v, grid_of(s), edges, d)
            aggregates[f"s{i}_n"] = "count(*)"
            axis = GridAxis(size=len(edges) + 1)
            parts.append(Part(spec=s, axes=[axis], grouping=(f"b{i}",), columns=[f"s{i}_n"]))
            continue
        if kinds.get(kind).aggregate == "ranks":
            ranks = _ranks_part(i, s, value, cell, d)
            if ranks is None:
                return None
            selects.update(ranks[1])
            flags[f"b{i}"] = ranks[2]
            aggregates[f"s{i}_n"] = "count(*)"
            parts.append(ranks[0])
            continue
        domains = s.get("groups", []) if kinds.get(kind).grouped else []
        if kind in ("histogram", "argmax") or (kind == "count" and s["columns"]):
            domains = s["columns"]
        found = [cell(dom) for dom in domains]
        if any(f is None for f in found):
            return None
        part = Part(spec=s, axes=[f[0] for f in found], grouping=tuple(f[1] for f in found))
        if kind in ("count", "histogram", "argmax"):
            aggregates[f"s{i}_n"] = "count(*)"
            part.columns = [f"s{i}_n"]
        else:
            v = value(s["columns"][0], numeric=True)
            units = None if v is None else _units_sql(v, s, d)
            if units is None:
                return None
            if kinds.get(kind).aggregate == "spread":
                lo_u, hi_u = grid_bounds(s["lower"], s["upper"], s["granularity"])
                selects[f"w{i}"] = f"2 * {units} - ({lo_u + hi_u})"
                aggregates[f"s{i}_n"] = f"count(w{i})"
                aggregates[f"s{i}_s"] = d.exact_sum.format(x=f"w{i}")
                aggregates[f"s{i}_q"] = d.exact_sum.format(x=f"w{i} * w{i}")
                part.columns = [f"s{i}_n", f"s{i}_s", f"s{i}_q"]
            else:
                selects[f"u{i}"] = units
                aggregates[f"s{i}_s"] = d.exact_sum.format(x=f"u{i}")
                aggregates[f"s{i}_n"] = f"count(u{i})"
                part.columns = [f"s{i}_s"] + (
                    [f"s{i}_n"] if kind in ("mean", "grouped_mean") else []
                )
        parts.append(part)
    return Plan(
        dialect=d,
        source_columns=source,
        values=values,
        selects=selects,
        parts=parts,
        aggregates=aggregates,
        flags=flags,
        id_type=schema.field(person).type if person in schema.names else None,
    )


def _ranks_part(
    i: int, s: dict[str, Any], value, cell, d: Dialect
) -> tuple[Part, dict[str, str], str] | None:
    """A quantiles statistic's part: the count per cell of its candidate grid (the
    numpy reader's aggregate, readers_stats), its layer-2 columns (the value x{i} and
    GridCells' estimate f{i}) and its layer-3 cell column b{i}; a row whose group (if
    any) is dropped, or whose value is missing, has cell -1 (no cell). None off the
    plan: a grid not evenly spaced (counted by searchsorted), columns not plain, or the
    Spark dialect (its cells are not checked against GridCells' here: the numpy readers)."""
    if d.name != DUCKDB.name or not s.get("columns"):
        return None
    v = value(s["columns"][0], numeric=True)
    if v is None:
        return None
    edges = np.array([float(c) for c in grid_of_quantiles(s)], dtype=np.float64)
    if edges.size == 0 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
        return None
    sql = even_grid_cells(v, GridCells(edges), d)
    found = [cell(dom) for dom in s.get("groups") or []]
    if sql is None or any(f is None for f in found):
        return None
    x, f = f"x{i}", f"f{i}"
    selects = {x: v, f: sql.estimate}
    cell_sql = sql.cell(x, f, d)
    kept = [f"{name} >= 0" for _, name in found]
    if kept:
        cell_sql = f"CASE WHEN {' AND '.join(kept)} THEN {cell_sql} ELSE -1 END"
    axis = GridAxis(size=edges.size + 1)
    part = Part(spec=s, axes=[axis], grouping=(f"b{i}",), columns=[f"s{i}_n"])
    return part, selects, cell_sql


def _on_plan(kind: str) -> bool:
    """Whether statistics of `kind` are on the plan (asked of the registry as it is now)."""
    return kind in kinds.REGISTRY and kinds.get(kind).aggregate not in OFF_PLAN


def _marginals_part(i: int, s: dict[str, Any], cell) -> tuple[Part, str | None] | None:
    """A cross-tabulation's part (a grouping set per maximal marginal, one count in every
    table) and its flag: 1 for the rows every column gives a cell, NULL for the others
    (readers.marginal_counts); None when no column drops a row (count(*))."""
    found = [cell(dom) for dom in s["columns"]]
    if any(f is None for f in found):
        return None
    axes = [f[0] for f in found]
    tables = [
        Part(
            spec=s,
            axes=[axes[k] for k in marginal],
            grouping=tuple(found[k][1] for k in marginal),
            columns=[f"s{i}_n"],
        )
        for marginal in maximal_marginals(s, axes)
    ]
    # only a dropped missing value has code -1 (Axis.codes)
    kept = [f"{name} >= 0" for axis, name in found if not axis.missing_cell]
    flag = f"CASE WHEN {' AND '.join(kept)} THEN 1 END" if kept else None
    return Part(spec=s, axes=axes, grouping=(), columns=[f"s{i}_n"], tables=tables), flag
