"""Spark queries skip through an index whose store is on S3 (moto's server on 127.0.0.1), named
by the ``metaindex.store`` conf key; endpoint and credentials from the standard AWS environment
variables. The table is local (Spark reading an ``s3a://`` table, configured by ``fs.s3a.*`` conf,
is tests/spark/test_s3a_spark.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.spark.api import MetaIndex

pytestmark = [pytest.mark.spark, pytest.mark.slow]

N_FILES = 40
ROWS = 20


def test_queries_skip_with_the_store_on_s3(spark, tmp_path, s3_env):
    from metaindex.spark import disable, enable
    from metaindex.spark.metrics import files_read

    root = tmp_path / "events"
    root.mkdir()
    for i in range(N_FILES):
        base = i * ROWS
        pq.write_table(
            pa.table({"id": pa.array(range(base, base + ROWS), pa.int64())}),
            root / f"part-{i:04d}.parquet",
        )
    store = f"s3://{s3_env.bucket()}/idx"
    spark.conf.set("metaindex.store", store)
    enable(spark)
    try:
        mi = MetaIndex(spark, str(root))
        assert mi.store_path.startswith(store + "/"), "the conf names the store"
        mi.index_builder().add_min_max_index("id").build(executor="local")
        agg = spark.read.parquet(str(root)).where("id BETWEEN 110 AND 130").groupBy().count()
        assert agg.collect()[0][0] == 21
        assert files_read(agg) == 2, "ids 110-130 live in files 5 and 6 only"
    finally:
        disable(spark)
        spark.conf.unset("metaindex.store")
