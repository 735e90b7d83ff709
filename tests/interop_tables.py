"""Tables of every type family and a NaN- and sign-aware comparison, for tests against peers.

Shared by the Spark (``tests/spark/``) and DuckDB (``tests/parquet/test_duckdb.py``) interop tests:
each peer reads the same families we write, and results are compared as Python values where
floats compare by ``repr`` (NaN equals NaN, -0.0 differs from 0.0).
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math

import pyarrow as pa

N = 120
UTC = dt.timezone.utc

FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 3.4e38, 1e-45]
DOUBLES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e300, -5e-324, 0.1, 2.0**53]
STRINGS = ["", "a", "héllo wörld", "日本語", "🦆🦆", "x" * 70, "NUL\x00inside", "zz"]
BINARIES = [b"", b"\x00", b"\xff\xfe\x00\x01", b"abc", b"\x80" * 40]
DATES = [
    dt.date(1970, 1, 1),
    dt.date(1969, 12, 31),
    dt.date(1000, 1, 1),
    dt.date(2024, 2, 29),
    dt.date(9999, 12, 31),
]


DELTA_BSS_ENCODINGS = {
    "i32": "DELTA_BINARY_PACKED",
    "i64": "DELTA_BINARY_PACKED",
    "str": "DELTA_BYTE_ARRAY",
    "bin": "DELTA_LENGTH_BYTE_ARRAY",
    "f64": "BYTE_STREAM_SPLIT",
    "f32": "BYTE_STREAM_SPLIT",
}
"""Columns of :func:`family_table` written with the delta and byte-stream-split encodings."""


def write_cases(**encodings: str) -> dict[str, dict]:
    """``write_table`` settings a peer must read our files under: data page v1 / v2 ×
    dictionary on / off × zstd / snappy, and v2 + gzip with :data:`DELTA_BSS_ENCODINGS` (plus
    ``encodings``: more columns, for peers that read them). Each test adds its own cases."""
    cases = {
        f"v{page[0]}-{'dict' if dictionary else 'plain'}-{codec}": {
            "data_page_version": page,
            "use_dictionary": dictionary,
            "compression": codec,
        }
        for page, dictionary, codec in itertools.product(
            ("1.0", "2.0"), (True, False), ("zstd", "snappy")
        )
    }
    cases["v2-delta-bss-gzip"] = {
        "data_page_version": "2.0",
        "compression": "gzip",
        "use_dictionary": False,
        "column_encoding": {**DELTA_BSS_ENCODINGS, **encodings},
    }
    return cases


def _pick(options, i, null_every=0):
    """Options cycled over rows, with a null every ``null_every`` rows (0: none)."""
    if null_every and i % null_every == null_every - 1:
        return None
    return options[i % len(options)]


def _decimal(i: int, digits: int, scale: int) -> decimal.Decimal:
    """A value using all ``digits`` digits for some rows, negative for odd rows."""
    magnitude = (10**digits - 1) if i % 10 == 0 else (i * 7919) % 10 ** min(digits, 12)
    exact = decimal.Context(prec=60)
    return decimal.Decimal(magnitude if i % 2 == 0 else -magnitude).scaleb(-scale, exact)


def family_columns(n: int = N) -> dict[str, pa.Array]:
    """One column per type family; nullable, with edge values (extremes, NaN, -0.0, unicode)."""
    r = range(n)
    ts_base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    ntz_base = dt.datetime(1960, 6, 1, 12, 30)
    cols = {
        "i8": pa.array([_pick([-128, 127, 0, -1, 5], i, 7) for i in r], pa.int8()),
        "i16": pa.array([_pick([-32768, 32767, 0, 300], i, 7) for i in r], pa.int16()),
        "i32": pa.array([_pick([-(2**31), 2**31 - 1, 0, i], i, 7) for i in r], pa.int32()),
        "i64": pa.array([_pick([-(2**63), 2**63 - 1, 0, i * 10**12], i, 7) for i in r], pa.int64()),
        "u8": pa.array([_pick([0, 255, 128, i % 256], i, 7) for i in r], pa.uint8()),
        "u16": pa.array([_pick([0, 65535, 32768, i], i, 7) for i in r], pa.uint16()),
        "u32": pa.array([_pick([0, 2**32 - 1, 2**31, i], i, 7) for i in r], pa.uint32()),
        "u64": pa.array([_pick([0, 2**64 - 1, 2**63, i], i, 7) for i in r], pa.uint64()),
        "f32": pa.array([_pick(FLOATS, i, 11) for i in r], pa.float32()),
        "f64": pa.array([_pick(DOUBLES, i, 11) for i in r], pa.float64()),
        "str": pa.array([_pick(STRINGS, i, 5) for i in r], pa.string()),
        "bin": pa.array([_pick(BINARIES, i, 6) for i in r], pa.binary()),
        "fixed": pa.array(
            [None if i % 9 == 8 else bytes([i % 256, 0, 255, 7, i % 3]) for i in r], pa.binary(5)
        ),
        "dec9": pa.array(
            [None if i % 8 == 7 else _decimal(i, 9, 2) for i in r], pa.decimal128(9, 2)
        ),
        "dec18": pa.array(
            [None if i % 8 == 7 else _decimal(i, 18, 4) for i in r], pa.decimal128(18, 4)
        ),
        "dec38": pa.array(
            [None if i % 8 == 7 else _decimal(i, 38, 10) for i in r], pa.decimal128(38, 10)
        ),
        "date": pa.array([_pick(DATES, i, 9) for i in r], pa.date32()),
        "ts_utc": pa.array(
            [None if i % 10 == 9 else ts_base + dt.timedelta(hours=i, microseconds=i) for i in r],
            pa.timestamp("us", tz="UTC"),
        ),
        "ts_ntz": pa.array(
            [None if i % 10 == 9 else ntz_base + dt.timedelta(days=i, microseconds=7) for i in r],
            pa.timestamp("us"),
        ),
        "bool": pa.array([_pick([True, False, False], i, 4) for i in r], pa.bool_()),
        "struct": pa.array(
            [
                None
                if i % 9 == 4
                else {
                    "a": None if i % 5 == 0 else i,
                    "b": _pick(STRINGS, i),
                    "c": {"d": float(i) / 4},
                }
                for i in r
            ],
            pa.struct(
                [("a", pa.int32()), ("b", pa.string()), ("c", pa.struct([("d", pa.float64())]))]
            ),
        ),
        "list_i32": pa.array(
            [None if i % 11 == 3 else [j * i for j in range(i % 5)] for i in r],
            pa.list_(pa.int32()),
        ),
        "list_str": pa.array(
            [
                None
                if i % 11 == 4
                else [None if j == 1 else _pick(STRINGS, i + j) for j in range(i % 4)]
                for i in r
            ],
            pa.list_(pa.string()),
        ),
        "map": pa.array(
            [
                None
                if i % 13 == 5
                else [(f"k{j}", None if j == 2 else i * j) for j in range(i % 4)]
                for i in r
            ],
            pa.map_(pa.string(), pa.int32()),
        ),
        "list_struct": pa.array(
            [
                None
                if i % 7 == 6
                else [
                    None if j == 3 else {"x": i + j, "y": None if j % 2 else f"y{j}"}
                    for j in range(i % 5)
                ]
                for i in r
            ],
            pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ),
    }
    return cols


def family_table(n: int = N, exclude: tuple = ()) -> pa.Table:
    """All type families as one table (``exclude``: column names to leave out)."""
    cols = {k: v for k, v in family_columns(n).items() if k not in exclude}
    return pa.table(cols)


def canonical(value):
    """A Python value where floats become their repr (NaN == NaN, -0.0 != 0.0), recursively."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(canonical(v) for v in value)
    return value


def assert_same_values(actual: pa.Table, expected: pa.Table, why: str, columns=None) -> None:
    """Every column of ``expected`` (or ``columns``) holds the same values in ``actual``.

    Values are compared as Python objects, so a peer's own type for a family (Spark's bigint
    for uint32, decimal(20,0) for uint64) compares equal to the source value it came from.
    """
    assert actual.num_rows == expected.num_rows, (
        f"{why}: {actual.num_rows} rows, expected {expected.num_rows}"
    )
    bad = []
    for name in columns or expected.column_names:
        assert name in actual.column_names, f"{why}: column {name} is missing"
        got = canonical(actual.column(name).to_pylist())
        want = canonical(expected.column(name).to_pylist())
        if got != want:
            row = next(i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w)
            bad.append(f"{name} (row {row}: {got[row]!r} != {want[row]!r})")
    assert not bad, f"{why}: columns differ: {'; '.join(bad)}"


def assert_same_tables(actual: pa.Table, expected: pa.Table, why: str) -> None:
    """Same Arrow schema (names and types) and the same values."""
    assert actual.schema.equals(expected.schema, check_metadata=False), (
        f"{why}: schema differs:\n{actual.schema}\nvs\n{expected.schema}"
    )
    assert_same_values(actual, expected, why)
