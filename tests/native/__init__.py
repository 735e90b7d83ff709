"""The kernels (cython_ext/, metaindex._native) against their pure-Python references in
tests/reference/, against pyarrow, and on hostile input."""
