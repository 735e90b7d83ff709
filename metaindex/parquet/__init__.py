"""The Parquet file format on top of the kernels (writer and reader arrive with the files issue)."""
