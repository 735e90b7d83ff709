"""The PySpark face of metaindex: index a table, then let ordinary queries skip files.

::

    from metaindex.spark import MetaIndex, enable, last_query_stats

    mi = MetaIndex(spark, "/data/events")           # a path or a catalog table name
    mi.index_builder().add_min_max_index("temp").add_bloom_filter_index("city").build()
    enable(spark)                                   # on the running session
    spark.read.parquet("/data/events").where("temp > 30").count()   # reads only kept files
    last_query_stats(spark)

Or for a whole application, with no Python call (PySpark, spark-submit, spark-sql, Thrift and
Connect servers)::

    spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions
    spark.jars=<metaindex.spark.jar_path()>          # `metaindex jar` prints it

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
    "explain": "metaindex.spark.explaining",
    "SkippingNotEnabledError": "metaindex.spark.explaining",
    "last_query_stats": "metaindex.spark.stats",
    "aggregated_stats": "metaindex.spark.stats",
    "clear_stats": "metaindex.spark.stats",
    "QueryStats": "metaindex.spark.stats",
    "SparkExecutor": "metaindex.spark.executor",
    "jar_path": "metaindex.spark._jvm",
    "UnsupportedSparkError": "metaindex.spark._jvm",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'metaindex.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return __all__
