"""The query engine's session settings that change what a predicate means: the time zone of
``TIMESTAMP '...'`` literals, the case rule for column names, and Spark's calendar rebase read
modes (which decide when the index may judge a DATE/TIMESTAMP conjunct:
``metaindex.engine.calendar``). ``metaindex.spark.config`` reads them from a Spark session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metaindex.engine import calendar

__all__ = ["SessionSettings"]


@dataclass(frozen=True)
class SessionSettings:
    """The query engine's session settings that change what a predicate means.

    Attributes:
        time_zone: the session time zone (IANA name) ``TIMESTAMP '...'`` literals without a zone
            are read in (Spark's ``spark.sql.session.timeZone``).
        case_sensitive: resolve column names exactly (``spark.sql.caseSensitive``).
        datetime_rebase_read: ``spark.sql.parquet.datetimeRebaseModeInRead`` (EXCEPTION,
            CORRECTED or LEGACY).
        int96_rebase_read: ``spark.sql.parquet.int96RebaseModeInRead``.
    """

    time_zone: str = "UTC"
    case_sensitive: bool = False
    datetime_rebase_read: str = "CORRECTED"  # Spark 4's defaults (Spark 3's: EXCEPTION)
    int96_rebase_read: str = "CORRECTED"

    SPARK_CONF = {
        "time_zone": "spark.sql.session.timeZone",
        "case_sensitive": "spark.sql.caseSensitive",
        "datetime_rebase_read": "spark.sql.parquet.datetimeRebaseModeInRead",
        "int96_rebase_read": "spark.sql.parquet.int96RebaseModeInRead",
    }

    def __post_init__(self):
        if not isinstance(self.time_zone, str) or not self.time_zone:
            raise TypeError(f"time_zone is an IANA zone name (str), not {self.time_zone!r}")
        if not isinstance(self.case_sensitive, bool):
            raise TypeError(f"case_sensitive is a bool, not {self.case_sensitive!r}")
        for name in ("datetime_rebase_read", "int96_rebase_read"):
            value = getattr(self, name)
            if not isinstance(value, str) or value.upper() not in calendar.MODES:
                raise ValueError(f"{name} is one of {', '.join(calendar.MODES)}, not {value!r}")
            object.__setattr__(self, name, value.upper())

    @classmethod
    def from_spark_conf(cls, conf) -> SessionSettings:
        """The settings of a Spark session from its conf entries (``{key: value}``; missing
        keys take Spark's defaults). The legacy ``spark.sql.legacy.parquet.*`` spellings of the
        rebase modes are read too."""

        def get(key):
            value = conf.get(key)
            if value is None and key.startswith("spark.sql.parquet."):
                value = conf.get("spark.sql.legacy.parquet." + key[len("spark.sql.parquet.") :])
            return value

        found: dict[str, Any] = {}
        for name, key in cls.SPARK_CONF.items():
            value = get(key)
            if value is None or value == "":
                continue
            found[name] = (
                str(value).strip().lower() == "true"
                if name == "case_sensitive"
                else str(value).strip()
            )
        return cls(**found)
