"""gtop: a top-like live profiler for GPU programs."""

__version__ = "0.1.0"
