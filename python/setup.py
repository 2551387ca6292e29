"""Builds the sptune package with the libsptune it belongs with (pyproject.toml holds the metadata).

The shared library is copied into the package, so that `pip install ./python` works wherever the package lands:
$SPTUNE_LIB names it, else the source tree's build folder (../build, as README builds it) is used. Without
either the build stops and says how to get one (a package that cannot find its library is no package).
"""
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# the package's own _SONAME (one place to change; CMakeLists.txt's SOVERSION makes the library's)
with open(os.path.join(HERE, "sptune", "__init__.py")) as f:
    SONAME = re.search(r'^_SONAME = "([^"]+)"', f.read(), re.M).group(1)


def find_library():
    for path in (os.environ.get("SPTUNE_LIB"), os.path.join(HERE, "..", "build", SONAME)):
        if path and os.path.isfile(path):
            return path
    raise SystemExit(f"sptune: {SONAME} not found: build it first (cmake -S . -B build && cmake --build build, "
                     f"from the repository's root) or set SPTUNE_LIB to its path")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = find_library()
        shutil.copy2(lib, os.path.join(self.build_lib, "sptune", SONAME))
        print(f"sptune: packaged {lib}")


setup(cmdclass={"build_py": BuildWithLibrary})
