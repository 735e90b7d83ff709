"""Compiled kernels, built from cython_ext/*.pyx by setup.py."""
