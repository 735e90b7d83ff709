"""xskipper's Python API on metaindex: change ``from xskipper import ...`` to
``from metaindex.xskipper import ...``.

::

    from metaindex.xskipper import Xskipper, Registration

    Xskipper.setConf(spark, {"io.xskipper.parquet.mdlocation": "/data/_indexes"})
    xskipper = Xskipper(spark, "/data/events")
    xskipper.indexBuilder().addMinMaxIndex("temp").addBloomFilterIndex("vid") \\
        .build(spark.read.format("parquet")).show()
    Xskipper.enable(spark)

A thin layer over :mod:`metaindex.spark` (the snake_case API stays the primary one): the same
methods, arguments, return types and DataFrame layouts as xskipper's Python API; every
``io.xskipper.*`` key is mapped, accepted or refused with a typed error (see
:mod:`metaindex.xskipper.conf`); plugins are Python index classes (see
:mod:`metaindex.xskipper.registration`). pyspark is needed only when a method runs.
"""

from metaindex.xskipper.indexbuilder import IndexBuilder
from metaindex.xskipper.registration import Registration
from metaindex.xskipper.xskipper import Xskipper, XskipperException

__all__ = ["Xskipper", "IndexBuilder", "Registration", "XskipperException"]
