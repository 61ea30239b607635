"""Build hook of the pip package (pyproject.toml): build libsla with CMake
and ship it inside the package as sla/lib/libsla.so.

The C sources are the repository's: the directory above this one, or
$SLA_SOURCE_DIR. The version is read from the root CMakeLists.txt's
project(sla VERSION ...), the one place it is written. CMake options can be
added through $SLA_CMAKE_ARGS (space separated, e.g. "-DSLA_WITH_MPI=OFF");
the parallelism of the build follows $CMAKE_BUILD_PARALLEL_LEVEL (default:
all CPUs).
"""

import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir():
    root = os.environ.get("SLA_SOURCE_DIR") or os.path.dirname(HERE)
    if not os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        raise RuntimeError("sla: the C sources (CMakeLists.txt) are not in %s; build from the "
                           "repository's python/ directory or set SLA_SOURCE_DIR" % root)
    return root


def c_version():
    with open(os.path.join(source_dir(), "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*sla\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("sla: no project(sla VERSION ...) in CMakeLists.txt")
    return m.group(1)


class BuildWithLibsla(build_py):
    """build_py, then CMake: libsla.so into the built package's lib/."""

    def run(self):
        super().run()
        root = source_dir()
        build = os.path.join(os.path.abspath(self.build_lib), "..", "cmake-libsla")
        build = os.path.normpath(build)
        cfg = ["cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               "-DSLA_BUILD_TESTS=OFF"] + shlex.split(os.environ.get("SLA_CMAKE_ARGS", ""))
        subprocess.check_call(cfg)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build, "--target", "sla_shared", "-j", jobs])
        lib = os.path.realpath(os.path.join(build, "lib", "libsla.so"))
        dest = os.path.join(self.build_lib, "sla", "lib")
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(lib, os.path.join(dest, "libsla.so"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


setup(version=c_version(), cmdclass={"build_py": BuildWithLibsla}, distclass=BinaryDistribution)
