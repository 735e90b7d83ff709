"""metaindex: data-skipping indexes for Parquet tables, on its own Parquet core."""

__version__ = "0.1.0"

__all__ = ["__version__", "MetaIndex"]


def __getattr__(name):
    # MetaIndex pulls in pyarrow and the index kinds: load it on first use, so that
    # ``import metaindex`` (and the kernels' import of metaindex.errors) stays light.
    if name == "MetaIndex":
        from metaindex.api import MetaIndex

        return MetaIndex
    raise AttributeError(f"module 'metaindex' has no attribute {name!r}")
