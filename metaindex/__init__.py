"""metaindex: data-skipping indexes for Parquet tables, on its own Parquet core."""

__version__ = "0.1.0"

__all__ = ["__version__"]
