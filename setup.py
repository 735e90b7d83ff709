"""Build: every cython_ext/<name>.pyx becomes the extension metaindex._native.<name>.

Set METAINDEX_EXT=name1,name2 to build only some kernels (handy while developing one).
Set METAINDEX_SANITIZE=1 to build with AddressSanitizer (the checked build that
`make asan` runs the hostile-input tests under, with PYTHONMALLOC=malloc so every
Python buffer is a malloc block ASan guards).
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
only = {n for n in os.environ.get("METAINDEX_EXT", "").split(",") if n}
sanitize = os.environ.get("METAINDEX_SANITIZE") == "1"
flags = ["-O3", "-Wall", "-Wno-unused-function", "-Wno-unreachable-code"]
if sanitize:
    flags = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Wall", "-Wno-unused-function"]

extensions = []
for pyx in sorted(glob.glob(os.path.join("cython_ext", "*.pyx"))):
    name = os.path.splitext(os.path.basename(pyx))[0]
    if only and name not in only:
        continue
    extensions.append(
        Extension(
            f"metaindex._native.{name}",
            [pyx],
            include_dirs=[os.path.join(HERE, "cython_ext"), numpy.get_include()],
            extra_compile_args=flags,
            extra_link_args=["-fsanitize=address"] if sanitize else [],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
    )

directives = {
    "language_level": "3",
    "embedsignature": True,
    "cdivision": True,
    "initializedcheck": False,
}

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        include_path=["cython_ext"],
        nthreads=os.cpu_count() or 1,
        force=sanitize,
    ),
)
