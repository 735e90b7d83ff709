"""Dates and timestamps in literals: Spark's string forms, and a UTC normal form."""

from __future__ import annotations

import datetime
import re
import zoneinfo

from metaindex.errors import ExpressionError

__all__ = [
    "EPOCH",
    "EPOCH_DATE",
    "parse_date",
    "parse_timestamp",
    "to_naive_utc",
    "zone_named",
    "session_zone",
]

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_DATE = datetime.date(1970, 1, 1)

# Spark's string -> date cast: yyyy, yyyy-[m]m, yyyy-[m]m-[d]d, then anything after ' ' or 'T'
_DATE = re.compile(r"\s*\+?(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?\s*", re.S)
# Spark's string -> timestamp cast: a date, then [h]h[:[m]m[:[s]s[.fraction]]], then a zone
_TIMESTAMP = re.compile(
    r"\s*\+?(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?"
    r"(?:[ T](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?)?"
    r"\s*(Z|[+-]\d{1,2}(?::?\d{2})?|(?:UTC|GMT)(?:[+-]\d{1,2}(?::?\d{2})?)?|[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+)?\s*"
)
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?")


def parse_date(text: str, column: str = "") -> datetime.date:
    """A date from Spark's date string forms (``2026``, ``2026-1``, ``2026-01-01 12:00``...).

    Raises:
        ExpressionError: the text is not a date Spark would read.
    """
    m = _DATE.fullmatch(text)
    try:
        if m is None:
            raise ValueError(text)
        return datetime.date(int(m[1]), int(m[2] or 1), int(m[3] or 1))
    except ValueError:
        raise ExpressionError(
            f"cannot read {text!r} as a date{_for(column)} (use yyyy-mm-dd)"
        ) from None


def parse_timestamp(text: str, column: str = "") -> datetime.datetime:
    """A timestamp from Spark's string forms; aware when the text names a zone or an offset.

    Raises:
        ExpressionError: the text is not a timestamp Spark would read.
    """
    m = _TIMESTAMP.fullmatch(text)
    try:
        if m is None:
            raise ValueError(text)
        fraction = (m[7] or "").ljust(6, "0")[:6]  # Spark keeps microseconds, drops the rest
        dt = datetime.datetime(
            int(m[1]),
            int(m[2] or 1),
            int(m[3] or 1),
            int(m[4] or 0),
            int(m[5] or 0),
            int(m[6] or 0),
            int(fraction),
        )
        return dt if m[8] is None else dt.replace(tzinfo=_zone(m[8]))
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        raise ExpressionError(
            f"cannot read {text!r} as a timestamp{_for(column)} "
            "(use yyyy-mm-dd hh:mm:ss[.ffffff][zone])"
        ) from None


def zone_named(name: str) -> datetime.tzinfo:
    """A time zone from an IANA name or an offset (``Z``, ``+08:00``, ``GMT-3``, ``UTC+5:30``).

    Raises:
        zoneinfo.ZoneInfoNotFoundError / ValueError: neither.
    """
    return _zone(name)


def session_zone(name: str) -> datetime.tzinfo:
    """A session time zone (``spark.sql.session.timeZone``): an IANA name or an offset.

    Raises:
        ExpressionError: neither (or not a str).
    """
    if not isinstance(name, str):
        raise ExpressionError(f"a time zone is a str (an IANA name or an offset), not {name!r}")
    try:
        return datetime.timezone.utc if name.upper() == "UTC" else _zone(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ExpressionError(
            f"unknown time zone {name!r} (use an IANA name such as 'UTC' or "
            "'Europe/Paris', or an offset such as '+08:00')"
        ) from None


def _zone(name: str) -> datetime.tzinfo:
    if name in ("Z", "UTC", "GMT"):
        return datetime.timezone.utc
    if name[:3] in ("UTC", "GMT"):
        name = name[3:]
    m = _OFFSET.fullmatch(name)
    if m is None:
        return zoneinfo.ZoneInfo(name)
    sign = -1 if m[1] == "-" else 1
    return datetime.timezone(sign * datetime.timedelta(hours=int(m[2]), minutes=int(m[3] or 0)))


def to_naive_utc(value: datetime.datetime) -> datetime.datetime:
    """An aware datetime as naive UTC; a naive one unchanged."""
    if value.tzinfo is None:
        return value
    return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _for(column: str) -> str:
    return f" for column {column!r}" if column else ""
