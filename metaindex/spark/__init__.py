"""The PySpark face of metaindex: index a table, then let ordinary queries skip files.

::

    from metaindex.spark import MetaIndex, enable, last_query_stats

    mi = MetaIndex(spark, "/data/events")           # a path or a catalog table name
    mi.index_builder().add_min_max_index("temp").add_bloom_filter_index("city").build()
    enable(spark)                                   # on the running session
    spark.read.parquet("/data/events").where("temp > 30").count()   # reads only kept files
    last_query_stats(spark)

pyspark is imported lazily: ``import metaindex.spark`` works without it.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "MetaIndex": "metaindex.spark.api",
    "enable": "metaindex.spark.hook",
    "disable": "metaindex.spark.hook",
    "is_enabled": "metaindex.spark.hook",
    "list_indexes": "metaindex.spark.api",
    "last_query_stats": "metaindex.spark.stats",
    "aggregated_stats": "metaindex.spark.stats",
    "clear_stats": "metaindex.spark.stats",
    "QueryStats": "metaindex.spark.stats",
    "SparkExecutor": "metaindex.spark.executor",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'metaindex.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return __all__
