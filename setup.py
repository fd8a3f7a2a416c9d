"""Build of the compiled modules.

Cython directives are set here once. ``TIMELY_DEBUG=1`` builds with bounds
checks, wraparound checks, C assertions and no optimisation; ``TIMELY_SANITIZE=1``
adds ``-fsanitize=address,undefined``. Release builds (neither set) carry no
debug information: compiled with ``-g0`` and stripped at link time, which
makes the installed modules several times smaller. ``TIMELY_MODULES``, a
comma-separated list of packages or modules (``timely.container,timely.progress``),
builds only the modules within them (for a sanitized build of one code path;
an install needs them all). ``TIMELY_BUILD_CACHE=<directory>`` keeps each
compiled module there under a digest of everything its build reads (its C
source as Cython wrote it, the C library's sources, the flags, numpy's and
Python's versions), and a later build with the same digest copies it
instead of compiling: the wheel and the install of one CI run compile once.
"""

import hashlib
import os
import re
import shutil
import sys
import sysconfig

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_clib import build_clib
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("TIMELY_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("TIMELY_SANITIZE", "") not in ("", "0")

directives = {
    "language_level": 3,
    "embedsignature": True,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "overflowcheck": DEBUG,
}

compile_args = ["-std=c11"]
link_args = []
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if DEBUG:
    compile_args += ["-O0", "-g", "-UNDEBUG"]
    macros.append(("CYTHON_TRACE", "0"))
else:
    compile_args += ["-O3"]
    macros.append(("NDEBUG", "1"))
if not DEBUG and not SANITIZE:
    # Python's own CFLAGS ask for -g; the last flag wins, and -s strips what the
    # linker would keep (the module's exported symbols stay in .dynsym).
    compile_args += ["-g0"]
    link_args += ["-s"]
if SANITIZE:
    # -O1, the sanitizers' advice: it keeps the reports' stacks readable and
    # compiles in half the time -O3 takes with them.
    compile_args += ["-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    link_args += ["-fsanitize=address,undefined"]

# The C sources under csrc/ are compiled once, into one static library that
# every module links (the linker takes only the objects a module uses). Listing
# them as each module's sources instead would have parallel module builds write
# the same object file at once.
CSOURCES = [
    "csrc/sort_rows.c",
    "csrc/mutable_antichain.c",
    "csrc/ring.c",
    "csrc/hash.c",
]
CLIB = (
    "timely_csrc",
    {
        "sources": CSOURCES,
        "include_dirs": ["csrc"],
        "macros": macros,
        "cflags": compile_args,
    },
)

modules = [
    "timely.progress._timestamp",
    "timely.progress._change_batch",
    "timely.progress._frontier",
    "timely.progress._reachability",
    "timely.progress._notificator",
    "timely.progress._operate",
    "timely.communication._ring",
    "timely.communication._mailbox",
    "timely.communication._codec",
    "timely.container._columns",
    "timely.container._aggregate",
    "timely.container._records",
    "timely.container._serialize",
    "timely.dataflow._activate",
    "timely.dataflow._subgraph",
    "timely.dataflow._progcaster",
    "timely.dataflow._handles",
    "timely.dataflow._channels",
    "timely.dataflow.operators._relational",
    "timely.algorithms._graph",
]


ONLY = [part.strip() for part in os.environ.get("TIMELY_MODULES", "").split(",") if part.strip()]
if ONLY:
    modules = [name for name in modules
               if any(name == part or name.startswith(part + ".") for part in ONLY)]
    if not modules:
        raise SystemExit(f"TIMELY_MODULES={os.environ['TIMELY_MODULES']!r} names no module")


def extension(name):
    return Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        include_dirs=["csrc", numpy.get_include()],
        define_macros=macros,
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )


class BuildClib(build_clib):
    """Always rebuilds: a release build must never reuse objects of a debug one."""

    def initialize_options(self):
        super().initialize_options()
        self.force = True


CACHE = os.environ.get("TIMELY_BUILD_CACHE", "")
# Cython's note of how it was called names the build's own paths (numpy's
# headers in a throwaway build environment); the digest leaves it out.
METADATA = re.compile(rb"/\* BEGIN: Cython Metadata.*?END: Cython Metadata \*/", re.DOTALL)


def digest(ext) -> str:
    """What a module's build reads, hashed: a module with the same digest
    is the same file."""
    h = hashlib.sha256()
    for name in ext.sources:
        with open(name, "rb") as f:
            h.update(METADATA.sub(b"", f.read()))
    for name in sorted(os.listdir("csrc")):
        with open(os.path.join("csrc", name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    h.update(repr((sorted(ext.define_macros), ext.extra_compile_args, ext.extra_link_args,
                   numpy.__version__, sys.version, sysconfig.get_platform(),
                   sysconfig.get_config_var("CC"), sysconfig.get_config_var("CFLAGS"),
                   os.environ.get("CC"), os.environ.get("CFLAGS"))).encode())
    return h.hexdigest()


class BuildExt(build_ext):
    """Always rebuilds, for the same reason (a cached module is one whose
    every input is the same). Builds the C library first (an in-place or
    editable build runs ``build_ext`` alone), then compiles the modules in
    parallel, one job per CPU, unless ``-j`` says otherwise (``python -m
    build`` and ``pip`` give no ``-j``)."""

    def initialize_options(self):
        super().initialize_options()
        self.force = True
        self.parallel = os.cpu_count() or 1

    def run(self):
        self.run_command("build_clib")
        super().run()

    def build_extension(self, ext):
        if not CACHE:
            return super().build_extension(ext)
        target = self.get_ext_fullpath(ext.name)
        kept = os.path.join(CACHE, f"{ext.name}-{digest(ext)}.so")
        if os.path.exists(kept):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copyfile(kept, target)
            return None
        super().build_extension(ext)
        os.makedirs(CACHE, exist_ok=True)
        partial = f"{kept}.{os.getpid()}.part"
        shutil.copyfile(target, partial)
        os.replace(partial, kept)
        return None


setup(
    ext_modules=cythonize(
        [extension(name) for name in modules],
        compiler_directives=directives,
        build_dir="build/cython-debug" if DEBUG else "build/cython",
        # Cython's own cache, keyed by the sources, the directives and its
        # version, is consulted only when it is not forced.
        force=not CACHE,
        nthreads=os.cpu_count() or 1,
        cache=os.path.join(CACHE, "cython") if CACHE else False,
    ),
    libraries=[CLIB],
    cmdclass={"build_clib": BuildClib, "build_ext": BuildExt},
)
