"""The few libcupti entry points the agent needs, through ctypes.

Standard library only (this runs inside the profiled process). No call here creates a
Python object per activity record: buffers are handled by :mod:`gtop.agent.buffers`.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

from .native import dlopen

# CUpti_ActivityKind values used by the agent.
MEMCPY = 1
MEMSET = 2
DRIVER = 4
RUNTIME = 5
CONCURRENT_KERNEL = 10
MARKER = 12
OVERHEAD = 17
SYNCHRONIZATION = 38
GRAPH_TRACE = 51

KIND_BY_NAME = {
    "graph": GRAPH_TRACE,
    "kernel": CONCURRENT_KERNEL,
    "memcpy": MEMCPY,
    "memset": MEMSET,
    "sync": SYNCHRONIZATION,
    "runtime": RUNTIME,
    "driver": DRIVER,
    "marker": MARKER,
    "overhead": OVERHEAD,
}
"""CUpti_ActivityKind of each kind name in :mod:`gtop.agent.modes`."""

ERROR_MULTIPLE_SUBSCRIBERS = 39  # CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
ATTR_ZEROED_OUT_ACTIVITY_BUFFER = 5  # CUpti_ActivityAttribute
FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED

SONAMES = ("libcupti.so.13", "libcupti.so.12", "libcupti.so")

BufferRequested = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_size_t),
)
BufferCompleted = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)
SubscriberCallback = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p
)


class CuptiError(Exception):
    """A libcupti call returned an error code."""

    def __init__(self, call: str, code: int, text: str) -> None:
        super().__init__(f"{call} failed: {text} ({code})")
        self.call = call
        self.code = code


def candidate_paths() -> list[str]:
    """Files that may be libcupti, best first: pip's nvidia wheels, the CUDA toolkit, then
    whatever the dynamic loader finds."""
    paths = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/lib/libcupti.so.13", "cuda_cupti/lib/libcupti.so.12"):
            if Path(root, sub).exists():
                paths.append(str(Path(root, sub)))
    for cuda in ("/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"):
        if Path(cuda, "libcupti.so").exists():
            paths.append(str(Path(cuda, "libcupti.so")))
    return [*paths, *SONAMES]


def load() -> tuple[ctypes.CDLL, str]:
    """Open libcupti: ``$GTOP_CUPTI_LIB``, else the copy this process already has (torch
    links one), else the first of :func:`candidate_paths` that loads.

    Raises:
        OSError: no libcupti could be loaded (message lists where it looked).
    """
    env = os.environ.get("GTOP_CUPTI_LIB")
    first = [(env, os.RTLD_NOW)] if env else []
    loaded = [(soname, os.RTLD_NOLOAD | os.RTLD_NOW) for soname in SONAMES]
    for path, mode in [*first, *loaded, *((p, os.RTLD_NOW) for p in candidate_paths())]:
        lib = dlopen(path, mode)
        if lib is not None:
            return lib, path
    raise OSError(
        "libcupti not found: pip install nvidia-cuda-cupti, or set GTOP_CUPTI_LIB to its path"
    )


class Cupti:
    """Typed wrappers over libcupti; every failing call raises :class:`CuptiError`."""

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.lib = lib
        self.path = path
        u32p = ctypes.POINTER(ctypes.c_uint32)
        self._sig("cuptiGetResultString", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])
        self._sig("cuptiGetVersion", [u32p])
        self._sig("cuptiGetTimestamp", [ctypes.POINTER(ctypes.c_uint64)])
        self._sig("cuptiActivityRegisterCallbacks", [BufferRequested, BufferCompleted])
        self._sig("cuptiActivityEnable", [ctypes.c_int])
        self._sig("cuptiActivityDisable", [ctypes.c_int])
        self._sig("cuptiActivityFlushAll", [ctypes.c_uint32])
        self._sig(
            "cuptiActivityGetNumDroppedRecords",
            [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_size_t)],
        )
        self._sig(
            "cuptiActivitySetAttribute",
            [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p],
        )
        self._sig(
            "cuptiSubscribe",
            [ctypes.POINTER(ctypes.c_void_p), SubscriberCallback, ctypes.c_void_p],
        )
        self._sig("cuptiUnsubscribe", [ctypes.c_void_p])
        self._sig("cuptiActivityEnableLatencyTimestamps", [ctypes.c_uint8], optional=True)
        self._sig(
            "cuptiActivityGetStructSize",
            [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_size_t)],
            optional=True,
        )
        self._sig("cuptiSetThreadIdType", [ctypes.c_int], optional=True)

    def _sig(self, name: str, argtypes: list, optional: bool = False) -> None:
        try:
            fn = getattr(self.lib, name)
        except AttributeError:
            if optional:
                return
            raise
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int

    def has(self, name: str) -> bool:
        return hasattr(self.lib, name)

    def result_string(self, code: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuptiGetResultString(code, ctypes.byref(text)) != 0 or not text.value:
            return f"CUPTI error {code}"
        return text.value.decode(errors="replace")

    def check(self, call: str, code: int) -> None:
        if code != 0:
            raise CuptiError(call, code, self.result_string(code))

    def version(self) -> int:
        v = ctypes.c_uint32()
        self.check("cuptiGetVersion", self.lib.cuptiGetVersion(ctypes.byref(v)))
        return v.value

    def timestamp(self) -> int:
        ts = ctypes.c_uint64()
        self.check("cuptiGetTimestamp", self.lib.cuptiGetTimestamp(ctypes.byref(ts)))
        return ts.value

    def struct_size(self, kind: int) -> int | None:
        """Bytes per record of ``kind`` as this libcupti writes it (CUPTI 13.1+), or None."""
        if not self.has("cuptiActivityGetStructSize"):
            return None
        size = ctypes.c_size_t()
        if self.lib.cuptiActivityGetStructSize(kind, 0, ctypes.byref(size)) != 0:
            return None
        return size.value

    def subscribe(self, callback: ctypes._CFuncPtr) -> ctypes.c_void_p:
        """Take CUPTI's subscriber slot, which only one tool in a process can hold.

        Raises:
            CuptiError: code :data:`ERROR_MULTIPLE_SUBSCRIBERS` when another tool
                (torch.profiler, Nsight) holds it.
        """
        handle = ctypes.c_void_p()
        self.check("cuptiSubscribe", self.lib.cuptiSubscribe(ctypes.byref(handle), callback, None))
        return handle

    def unsubscribe(self, handle: ctypes.c_void_p) -> None:
        self.check("cuptiUnsubscribe", self.lib.cuptiUnsubscribe(handle))

    def register_callbacks(self, requested: ctypes._CFuncPtr, completed: ctypes._CFuncPtr) -> None:
        self.check(
            "cuptiActivityRegisterCallbacks",
            self.lib.cuptiActivityRegisterCallbacks(requested, completed),
        )

    def set_zeroed_buffers(self) -> None:
        """Promise CUPTI zeroed buffers, so it does not zero them on the launching thread."""
        value = ctypes.c_uint8(1)
        size = ctypes.c_size_t(1)
        self.check(
            "cuptiActivitySetAttribute",
            self.lib.cuptiActivitySetAttribute(
                ATTR_ZEROED_OUT_ACTIVITY_BUFFER, ctypes.byref(size), ctypes.byref(value)
            ),
        )

    def system_thread_ids(self) -> None:
        """Report OS thread ids (gettid), which /proc and eBPF use, in API records."""
        if self.has("cuptiSetThreadIdType"):
            self.check("cuptiSetThreadIdType", self.lib.cuptiSetThreadIdType(1))

    def enable(self, kind: int) -> None:
        self.check(f"cuptiActivityEnable({kind})", self.lib.cuptiActivityEnable(kind))

    def disable(self, kind: int) -> None:
        self.check(f"cuptiActivityDisable({kind})", self.lib.cuptiActivityDisable(kind))

    def latency_timestamps(self, on: bool) -> None:
        """Record queued/submitted times of kernels (CUPTI leaves them out by default)."""
        if self.has("cuptiActivityEnableLatencyTimestamps"):
            self.check(
                "cuptiActivityEnableLatencyTimestamps",
                self.lib.cuptiActivityEnableLatencyTimestamps(int(on)),
            )

    def flush(self, forced: bool = False) -> None:
        self.check(
            "cuptiActivityFlushAll", self.lib.cuptiActivityFlushAll(FLUSH_FORCED if forced else 0)
        )

    def dropped(self, context: int | None, stream: int) -> int:
        """Records dropped for lack of buffer space since the last call (resets the count)."""
        n = ctypes.c_size_t()
        code = self.lib.cuptiActivityGetNumDroppedRecords(context, stream, ctypes.byref(n))
        return n.value if code == 0 else 0
