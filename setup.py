"""Build: every cython_ext/<name>.pyx becomes the extension metaindex._native.<name>.

Also compiles the Java shim (metaindex/spark/java/) with javac against the installed pyspark's
jars into metaindex/spark/jars/metaindex-spark.jar, shipped as package data; without a JDK or
pyspark at build time it says so and the shim is compiled at run time instead (it needs a JDK
then). Set METAINDEX_REQUIRE_JAR=1 to make a missing jar a build error.

Set METAINDEX_EXT=name1,name2 to build only some kernels (handy while developing one).
Set METAINDEX_SANITIZE=1 to build with AddressSanitizer (the checked build that
`make asan` runs the hostile-input tests under, with PYTHONMALLOC=malloc so every
Python buffer is a malloc block ASan guards).
"""
import glob
import importlib.util
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
only = {n for n in os.environ.get("METAINDEX_EXT", "").split(",") if n}
sanitize = os.environ.get("METAINDEX_SANITIZE") == "1"
flags = ["-O3", "-falign-functions=64", "-falign-loops=32", "-Wall", "-Wno-unused-function",
         "-Wno-unreachable-code"]
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



def _load_jarbuild():
    """metaindex/spark/jarbuild.py by path (standard library only; metaindex is not built)."""
    spec = importlib.util.spec_from_file_location(
        "_metaindex_jarbuild", os.path.join(HERE, "metaindex", "spark", "jarbuild.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_shim_jar(package_root: str) -> None:
    """<package_root>/metaindex/spark/jars/metaindex-spark.jar, unless it is up to date."""
    jarbuild = _load_jarbuild()
    out = os.path.join(package_root, "metaindex", "spark", "jars", "metaindex-spark.jar")
    spec = importlib.util.find_spec("pyspark")
    pyspark_dir = list(spec.submodule_search_locations)[0] if spec else None
    jars = jarbuild.spark_jars_dir(pyspark_dir)
    version = jarbuild.spark_version_of(jars) if jars else None
    why = None
    if version is None:
        why = "no pyspark (or $SPARK_HOME) with Spark's jars to compile against"
    else:
        props = jarbuild.jar_properties(out)
        if props.get("spark.version") == version and \
                props.get("sources.sha256") == jarbuild.sources_digest():
            return
        try:
            jarbuild.compile_jar(jars, out, version)
            print(f"metaindex: compiled the Spark shim for Spark {version}: {out}")
            return
        except jarbuild.JarBuildError as e:
            why = str(e)
    if os.environ.get("METAINDEX_REQUIRE_JAR") == "1":
        raise SystemExit(f"metaindex: cannot build the Spark shim jar: {why}")
    print(f"metaindex: WARNING: the Spark shim jar is not built ({why}); enable(spark) will "
          "compile it at run time (needs a JDK)", file=sys.stderr)


class BuildExtAndJar(build_ext):
    """build_ext, then the shim jar (in place for `make build` and editable installs, into
    the build directory for a wheel)."""

    def run(self):
        super().run()
        if not self.dry_run and os.environ.get("METAINDEX_EXT") is None:
            build_shim_jar(HERE if self.inplace else self.build_lib)


setup(
    cmdclass={"build_ext": BuildExtAndJar},
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        include_path=["cython_ext"],
        nthreads=os.cpu_count() or 1,
        force=sanitize,
    ),
)
