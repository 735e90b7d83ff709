"""What a machine with a Java runtime only looks like, for tests that run what users run: a
PATH with every tool of ``/usr/local/bin``, ``/usr/bin`` and ``/bin`` but the JDK's compilers
and the C toolchain, and a JAVA_HOME whose ``bin/`` holds only ``java``."""

from __future__ import annotations

import glob
import os
import re
import shutil

__all__ = ["HIDDEN", "jre_only"]

HIDDEN = re.compile(
    r"^(javac|jar|jshell|javadoc|cc|c89|c99|c\+\+|cpp|gcc|g\+\+|clang(\+\+)?|ld|as)"
    r"(-[0-9.]+)?$|^[a-z0-9_]+-linux-gnu-(gcc|g\+\+|cpp|c\+\+|ld|as)"
)
"""Names left out of the PATH: javac and its kin, C/C++ compilers, linkers, assemblers."""


def jre_only(directory) -> dict | None:
    """``{"PATH": ..., "JAVA_HOME": ...}`` of a JRE-only machine built under ``directory``
    (symlinks); None without a ``java`` to point at."""
    java = shutil.which("java")
    if java is None:
        return None
    bin_dir = os.path.join(directory, "bin")
    os.makedirs(bin_dir)
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for path in sorted(glob.glob(os.path.join(d, "*"))):
            name = os.path.basename(path)
            target = os.path.join(bin_dir, name)
            if not HIDDEN.match(name) and not os.path.lexists(target):
                os.symlink(path, target)
    jre = os.path.join(directory, "jre")
    os.makedirs(os.path.join(jre, "bin"))
    os.symlink(os.path.realpath(java), os.path.join(jre, "bin", "java"))
    return {"PATH": bin_dir, "JAVA_HOME": jre}
