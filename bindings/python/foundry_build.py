"""Builds foundry._foundry_cffi: the C library plus a cffi extension (API
mode, out-of-line).

The cffi declarations are not written by hand: they are the public headers
(include/foundry.h) run through the C preprocessor, so they can never drift
from the library, and the extension's C source includes those same headers,
so the compiler checks every declaration against them.  Run by setuptools
(see setup.py); `python foundry_build.py` builds in place for development.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the repository: Makefile, include/, tensor/, ...
INCLUDE = ROOT / "include"
STATIC = ROOT / "lib" / "libfoundry.a"

# Integer constants that the preprocessor folds away but Python wants.
CONSTANTS = """
#define TM_MAX_DIMS ...
#define TM_NUM_DENSE_DTYPES ...
#define TM_SAVE_NO_SYNC ...
"""

# Called by the library when storage that wraps Python memory dies.
CALLBACKS = """
extern "Python" void _foundry_release(void *data, void *user);
"""

# The C library's free(), which releases strings and arrays the library
# returns to its caller (tm_gpt_config_to_json, ...).
LIBC = """
void free(void *ptr);
"""


def _cc():
    return os.environ.get("CC", "cc")


def public_declarations():
    """include/foundry.h preprocessed into plain declarations for cdef."""
    with tempfile.TemporaryDirectory() as stub:
        # Empty system headers: cffi knows the standard types itself, and
        # their expansions would only get in its way.
        for name in ("stdint.h", "stddef.h", "stdbool.h", "stdio.h"):
            pathlib.Path(stub, name).write_text("")
        out = subprocess.run(
            [_cc(), "-E", "-P", "-undef", "-nostdinc", "-I", stub,
             "-I", str(INCLUDE), str(INCLUDE / "foundry.h")],
            check=True, capture_output=True, text=True).stdout
    # The only non-standard construct left: `, ...)` varargs stay (cffi
    # accepts them); attributes were guarded by __GNUC__, now undefined.
    return re.sub(r"\n\s*\n", "\n", out)


def build_library():
    """The static library, built by the project's Makefile (per-file ISA
    flags for the SIMD kernels live there)."""
    make = shutil.which("make")
    if make is None:
        sys.exit("foundry: building the C library needs `make`")
    jobs = str(min(os.cpu_count() or 1, 8))
    # A plain build whatever make invoked us (SAN=, ARCH=, BUILD= of an
    # outer make would otherwise leak in through MAKEFLAGS).
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    subprocess.run([make, "-C", str(ROOT), "-j" + jobs,
                    str(STATIC.relative_to(ROOT))], check=True, env=env)


def make_ffi():
    ffi = FFI()
    ffi.cdef(public_declarations() + CONSTANTS + CALLBACKS + LIBC)
    ffi.set_source(
        "foundry._foundry_cffi",
        "#include <stdlib.h>\n#include <foundry.h>\n",
        include_dirs=[str(INCLUDE)],
        extra_objects=[str(STATIC)],
        libraries=["m", "pthread"],
        extra_compile_args=["-std=c11", "-O2"],
    )
    return ffi


if "setuptools" in sys.modules or __name__ == "__main__":
    build_library()
ffibuilder = make_ffi()

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=str(HERE), verbose=False)
