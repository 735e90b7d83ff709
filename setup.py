"""Build: every cython_ext/<name>.pyx becomes the extension metaindex._native.<name>.

Also builds the Java shim's jars, one per supported Spark line, with Maven (jvm/, see
metaindex/spark/jarbuild.py) into metaindex/spark/jars/, shipped as package data. Every build
carries them: jars already built from the same sources are reused (a source tree after `make
jars`, an sdist), else Maven and a JDK must be there, and the build fails naming what is
missing. Maven's downloads are cached in its local repository (~/.m2).

Set METAINDEX_EXT=name1,name2 to build only some kernels (handy while developing one).
Set METAINDEX_SANITIZE=1 to build with AddressSanitizer (the checked build that
`make asan` runs the hostile-input tests under, with PYTHONMALLOC=malloc so every
Python buffer is a malloc block ASan guards).
"""

import glob
import importlib.util
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
only = {n for n in os.environ.get("METAINDEX_EXT", "").split(",") if n}
sanitize = os.environ.get("METAINDEX_SANITIZE") == "1"
flags = [
    "-O3",
    "-falign-functions=64",
    "-falign-loops=32",
    "-Wall",
    "-Wno-unused-function",
    "-Wno-unreachable-code",
]
if sanitize:
    flags = [
        "-O1",
        "-g",
        "-fsanitize=address",
        "-fno-omit-frame-pointer",
        "-Wall",
        "-Wno-unused-function",
    ]

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
        "_metaindex_jarbuild", os.path.join(HERE, "metaindex", "spark", "jarbuild.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_shim_jars(package_root: str) -> None:
    """Every line's jar in <package_root>/metaindex/spark/jars/: those of the source tree when
    they were built from these sources, else built with Maven (into the source tree too, so
    the next build reuses them).

    Raises:
        SystemExit: the jars are not there and cannot be built (what is missing is named).
    """
    import shutil

    jarbuild = _load_jarbuild()
    here = os.path.join(HERE, "metaindex", "spark", "jars")
    if jarbuild.sources_digest() is None:  # an sdist or tree without jvm/: jars as shipped
        names = (
            sorted(n for n in os.listdir(here) if n.endswith(".jar")) if os.path.isdir(here) else []
        )
        if not names:
            raise SystemExit(
                "metaindex: no Spark jars in metaindex/spark/jars and no jvm/ "
                "Maven build to make them"
            )
    else:
        if not jarbuild.up_to_date(here):
            try:
                jarbuild.build_jars(here)
            except jarbuild.JarBuildError as e:
                raise SystemExit(f"metaindex: {e}") from None
            print(f"metaindex: built the Spark jars with Maven into {here}")
        names = jarbuild.expected_jars()
    target = os.path.join(package_root, "metaindex", "spark", "jars")
    if os.path.abspath(target) == os.path.abspath(here):
        return
    os.makedirs(target, exist_ok=True)
    for stale in os.listdir(target):
        if stale.endswith(".jar") and stale not in names:
            os.remove(os.path.join(target, stale))
    for name in names:
        shutil.copyfile(os.path.join(here, name), os.path.join(target, name))


class BuildExtAndJar(build_ext):
    """The shim jars, then build_ext (in place for `make build` and editable installs, into
    the build directory for a wheel). METAINDEX_EXT (building some kernels) skips the jars."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # compile the kernels on every core (pip passes no -j)
            self.parallel = os.cpu_count() or 1

    def run(self):
        if not self.dry_run and os.environ.get("METAINDEX_EXT") is None:
            build_shim_jars(HERE if self.inplace else self.build_lib)  # first: fails fast
        super().run()


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
