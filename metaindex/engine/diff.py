"""What changed in a table since a snapshot: :mod:`metaindex.formats.diff`, where a table
format's default :meth:`~metaindex.formats.TableFormat.changes` computes it."""

from metaindex.formats.diff import Diff, diff, join

__all__ = ["Diff", "diff", "join"]
