"""Build the optional C accelerator; stepscope works without it (pure-Python fallback)."""

import sys

from setuptools import Extension, setup

THREAD_FLAGS = [] if sys.platform == "win32" else ["-pthread"]

setup(
    ext_modules=[
        Extension(
            "stepscope.xspace._fastwire",
            sources=[
                "src/stepscope/xspace/_fastwire.c",
                "src/stepscope/xspace/_fastwire_chunks.c",
                "src/stepscope/xspace/_fastwire_headers.c",
                "src/stepscope/xspace/_fastwire_rows.c",
            ],
            depends=["src/stepscope/xspace/_fastwire.h", "src/stepscope/_gallop.h"],
            optional=True,  # no compiler: install still succeeds, the fallback is used
            # Worker threads (STEPSCOPE_THREADS) decode event chunks; Windows decodes on one.
            extra_compile_args=["-O2", *THREAD_FLAGS],
            extra_link_args=THREAD_FLAGS,
        ),
        Extension(
            "stepscope.xspace.kineto._kscan",
            sources=[
                "src/stepscope/xspace/kineto/_kscan.c",
                "src/stepscope/xspace/kineto/_kscan_json.c",
                "src/stepscope/xspace/kineto/_kscan_buf.c",
            ],
            depends=["src/stepscope/xspace/kineto/_kscan.h"],
            optional=True,  # without it Kineto traces are routed event by event in Python
            extra_compile_args=["-O2"],
        ),
        Extension(
            "stepscope.stats._sweeps",
            sources=["src/stepscope/stats/_sweeps.c", "src/stepscope/stats/_sweeps_pairs.c"],
            depends=["src/stepscope/stats/_sweeps.h", "src/stepscope/_gallop.h"],
            optional=True,  # without it the op stack and step sweeps run in NumPy
            extra_compile_args=["-O2"],
        ),
        Extension(
            "stepscope.stats._enclosing",
            sources=["src/stepscope/stats/_enclosing.c"],
            optional=True,  # without it the enclosing-op walk is a Python loop
            extra_compile_args=["-O2"],
        ),
        Extension(
            "stepscope.stats.trace_index._segsearch",
            sources=["src/stepscope/stats/trace_index/_segsearch.c"],
            optional=True,  # without it the window queries bisect their segments in NumPy
            # worker threads (STEPSCOPE_THREADS) lay out the index's rows; Windows on one
            extra_compile_args=["-O2", *THREAD_FLAGS],
            extra_link_args=THREAD_FLAGS,
        ),
        Extension(
            "stepscope.tools.trace_viewer._pbpack",
            sources=["src/stepscope/tools/trace_viewer/_pbpack.c"],
            optional=True,  # without it the Perfetto export encodes with numpy (slower)
            extra_compile_args=["-O2"],
        ),
        Extension(
            "stepscope.tools.trace_viewer._jsonfmt",
            sources=["src/stepscope/tools/trace_viewer/_jsonfmt.c"],
            optional=True,  # without it the Chrome-trace export formats with Python's %
            extra_compile_args=["-O2"],
        ),
        Extension(
            "stepscope.capture._pytracer",
            sources=["src/stepscope/capture/_pytracer.c"],
            optional=True,  # without it the Python tracer uses sys.setprofile/sys.monitoring
            extra_compile_args=["-O2"],
        ),
    ]
)
