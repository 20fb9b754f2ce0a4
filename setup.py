"""The one thing pyproject.toml cannot declare: the optional C extension.

``agentlog._speedups`` is the whole-path read's inner loop, and an append's log line and index entry, in C (see
src/agentlog/_speedups.c). It is optional: where it cannot be built (no C
compiler, no zlib headers) the install still succeeds and the same loop
runs in Python, only slower (docs/performance.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "agentlog._speedups",
            ["src/agentlog/_speedups.c"],
            libraries=["z"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
