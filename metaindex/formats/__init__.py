"""Table and data formats: the seam where a new kind of table plugs in.

Two halves (:mod:`metaindex.formats.base`):

* a :class:`TableFormat` says where a table's data files and their identities come from —
  ``"directory"`` (:mod:`~metaindex.formats.directory`): the files below a root, identified by
  path, size and modification time; ``"delta"`` (:mod:`~metaindex.formats.delta`): a Delta
  Lake snapshot from its transaction log — and, for refresh, what changed since a snapshot
  (:mod:`~metaindex.formats.diff`; Delta: the log's commits since the indexed version);
* a :class:`DataFormat` says how one file's columns are read — ``"parquet"``
  (:mod:`~metaindex.formats.parquet`): our reader, footer statistics offered for min/max;
  next, Spark's readers for CSV, JSON and ORC.

The engine (``metaindex.engine``) reaches formats only through this registry, by the names an
index records (:class:`FormatSpec`, kept in the table identity of the metadata store:
``specs/metadata-store.md``, "Table and data formats"), so a new format is one module and one
line::

    from metaindex.formats import DataFormat, register_data_format

    class ArrowIpcFormat(DataFormat):
        name = "arrow"
        def open(self, path, filesystem, *, decryption_properties=None): ...

    register_data_format(ArrowIpcFormat)
    MetaIndex("/data/t", format="arrow").index_builder()...

An unknown name raises :class:`~metaindex.errors.UnsupportedFormatError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from metaindex.errors import DecodeError, UnsupportedFormatError
from metaindex.formats.base import (
    DataFile,
    DataFormat,
    FileReader,
    Listing,
    Statistics,
    TableFormat,
)
from metaindex.formats.delta import DeltaTableFormat
from metaindex.formats.directory import DirectoryFormat
from metaindex.formats.parquet import ParquetFormat
from metaindex.formats.sparkread import SPARK_READ_FORMATS

__all__ = [
    "TableFormat",
    "DataFormat",
    "FileReader",
    "Statistics",
    "DataFile",
    "Listing",
    "FormatSpec",
    "register_table_format",
    "register_data_format",
    "table_format",
    "data_format",
    "table_format_names",
    "data_format_names",
    "DirectoryFormat",
    "DeltaTableFormat",
    "ParquetFormat",
    "DEFAULT_TABLE_FORMAT",
    "DEFAULT_DATA_FORMAT",
]

DEFAULT_TABLE_FORMAT = "directory"
DEFAULT_DATA_FORMAT = "parquet"

_TABLE_FORMATS: dict = {}
_DATA_FORMATS: dict = {}


def _register(registry: dict, base: type, cls: type, replace: bool) -> type:
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"register a subclass of {base.__name__}, not {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"{cls.__name__}.name must be a non-empty str, not {name!r}")
    if registry.get(name, cls) is not cls and not replace:
        raise ValueError(
            f"a {base.__name__} named {name!r} is already registered "
            f"({registry[name].__name__}); pass replace=True to replace it"
        )
    registry[name] = cls
    return cls


def register_table_format(cls: type, *, replace: bool = False) -> type:
    """Make a :class:`TableFormat` subclass available under its ``name`` (returns it, so it
    also works as a class decorator).

    Raises:
        TypeError: not a TableFormat subclass.
        ValueError: no name, or the name is taken by another class (unless ``replace``).
    """
    return _register(_TABLE_FORMATS, TableFormat, cls, replace)


def register_data_format(cls: type, *, replace: bool = False) -> type:
    """Make a :class:`DataFormat` subclass available under its ``name`` (see
    :func:`register_table_format`)."""
    return _register(_DATA_FORMATS, DataFormat, cls, replace)


def _make(registry: dict, kind: str, name, options):
    if not isinstance(name, str):
        raise TypeError(f"a {kind} format name is a str, not {name!r}")
    cls = registry.get(name)
    if cls is None:
        raise UnsupportedFormatError(
            f"unknown {kind} format {name!r}; known: "
            f"{sorted(registry)} (register_{kind}_format adds one)",
            name,
        )
    return cls(options)


def table_format(name: str, options: Mapping | None = None) -> TableFormat:
    """The registered table format ``name``, configured with ``options``.

    Raises:
        UnsupportedFormatError: no table format of that name, or an option it does not take.
    """
    return _make(_TABLE_FORMATS, "table", name, options)


def data_format(name: str, options: Mapping | None = None) -> DataFormat:
    """The registered data format ``name``, configured with ``options``.

    Raises:
        UnsupportedFormatError: no data format of that name, or an option it does not take.
    """
    return _make(_DATA_FORMATS, "data", name, options)


def table_format_names() -> list:
    return sorted(_TABLE_FORMATS)


def data_format_names() -> list:
    return sorted(_DATA_FORMATS)


_KEYS = ("table_format", "data_format", "format_options")


@dataclass(frozen=True)
class FormatSpec:
    """The formats an index is defined with, as the store records them (the table identity's
    ``table_format``, ``data_format`` and ``format_options``; absent: ``directory`` /
    ``parquet`` / none, which is what every store written before them means).

    Attributes:
        table: the table format's name.
        data: the data format's name.
        options: the data format's options (``{str: str}``).
    """

    table: str = DEFAULT_TABLE_FORMAT
    data: str = DEFAULT_DATA_FORMAT
    options: dict = field(default_factory=dict)

    def table_format(self) -> TableFormat:
        """The table format (:class:`UnsupportedFormatError` when not registered)."""
        return table_format(self.table)

    def data_format(self) -> DataFormat:
        """The data format with its options (:class:`UnsupportedFormatError` when not
        registered, or for an option it does not take)."""
        return data_format(self.data, self.options)

    def agrees(self, recorded: FormatSpec) -> bool:
        """Whether a caller asking for these formats reads the table as ``recorded`` does: the
        same names, and every option given is recorded with the same value (a build records
        more: the ``schema`` Spark read, the time zone; a ``schema`` given as DDL text, not as
        Spark's JSON, is not compared here).
        """
        from metaindex.formats.sparkread import SCHEMA_OPTION, schema_shape

        if (self.table, self.data) != (recorded.table, recorded.data):
            return False
        for key, value in self.options.items():
            if key == SCHEMA_OPTION and schema_shape(value) is None:
                continue
            if key == SCHEMA_OPTION:
                if schema_shape(value) != schema_shape(recorded.options.get(key, "")):
                    return False
            elif recorded.options.get(key) != value:
                return False
        return True

    def to_record(self) -> dict:
        """The table identity attributes that record it."""
        return {
            "table_format": self.table,
            "data_format": self.data,
            "format_options": dict(self.options),
        }

    @classmethod
    def from_record(cls, extra: Mapping, where: str = "the table identity") -> FormatSpec:
        """From table identity attributes (a store written before formats were recorded has
        none: ``directory`` / ``parquet``).

        Raises:
            DecodeError: a recorded name that is not a string, options not ``{str: str}``.
        """
        table = extra.get("table_format", DEFAULT_TABLE_FORMAT)
        data = extra.get("data_format", DEFAULT_DATA_FORMAT)
        options = extra.get("format_options", {})
        if (
            not isinstance(table, str)
            or not isinstance(data, str)
            or not isinstance(options, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items())
        ):
            raise DecodeError(
                f"{where}: table_format and data_format must be strings and "
                f"format_options an object of strings, not "
                f"{ {k: extra.get(k) for k in _KEYS}!r}"
            )
        return cls(table, data, dict(options))


register_table_format(DirectoryFormat)
register_table_format(DeltaTableFormat)
register_data_format(ParquetFormat)
for _spark_read in SPARK_READ_FORMATS:
    register_data_format(_spark_read)
